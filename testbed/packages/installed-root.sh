#!/bin/bash
# Runs inside the clean Debian 13 root of install-scenario.sh, on the .debs in /var/tmp/debs: installs them as an
# admin would and checks what the installed files do. Every command is printed before its output.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8
run() { echo "\$ $*"; "$@"; }
fail() { echo "installed-root: FAIL: $*" >&2; exit 1; }
step() { echo; echo "== $*"; }

step "dpkg -i vgpu without the Java it depends on: unpacked, not configured"
echo "\$ dpkg -i /var/tmp/debs/vgpu_*.deb"
dpkg -i /var/tmp/debs/vgpu_*.deb >/var/tmp/dpkg.log 2>&1 && fail "dpkg -i succeeded without Java 25"
grep -E "depends on|not installed" /var/tmp/dpkg.log | head -n 3
step "the launcher without a Java 25: one line, exit 2"
set +e
run vgpu --version
status=$?
set -e
[ "$status" -eq 2 ] || fail "vgpu --version without Java 25 exited $status, not 2"

step "apt-get brings the Java 25 of vgpu's Depends from the Debian mirror, and the SPANK bridge for Slurm 24.11"
apt-get update -q >/dev/null
run apt-get install -y -q -f >/var/tmp/apt.log 2>&1 || { tail -n 20 /var/tmp/apt.log; fail "apt-get -f install"; }
run apt-get install -y -q /var/tmp/debs/vgpu-spank-slurm24.11_*.deb >>/var/tmp/apt.log 2>&1 \
    || { tail -n 20 /var/tmp/apt.log; fail "apt-get install vgpu-spank-slurm24.11"; }
dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\n' vgpu vgpu-spank-slurm24.11 openjdk-25-jre-headless

step "vgpu --version, through the /usr/bin/vgpu symlink"
run ls -l /usr/bin/vgpu
run vgpu --version
vgpu --version | grep -Eq '^vgpu [0-9][^ ]* \(commit [0-9a-f]{40}(-dirty)?, built [0-9TZ:-]+\)$' \
    || fail "vgpu --version does not say version, commit and build date"

step "the installed files"
dpkg -L vgpu vgpu-spank-slurm24.11 | grep -Ev '^/(\.|usr|usr/lib|usr/share|usr/share/doc|etc|usr/lib/systemd|usr/lib/systemd/system|usr/lib/tmpfiles.d|usr/lib/x86_64-linux-gnu)$' \
    | grep -v -e '^/usr/share/doc/' -e '^$' | sort
run ls -ld /var/log/vgpu /etc/vgpu/site.key

step "systemd-analyze verify of the installed unit"
run systemd-analyze verify /usr/lib/systemd/system/vgpu-tracker.service
echo "verify: exit 0"
run grep -E '^(User|ExecStart|NoNewPrivileges|ProtectSystem|PrivateTmp)=' /usr/lib/systemd/system/vgpu-tracker.service

step "vgpu config check and render of the installed /etc/vgpu/vgpu.conf"
run vgpu config check /etc/vgpu/vgpu.conf
run vgpu config render --list /etc/vgpu/vgpu.conf
run vgpu config render --what plugstack.conf.d/vgpu.conf /etc/vgpu/vgpu.conf
echo "installed-root: passed"
