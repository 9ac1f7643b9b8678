#!/usr/bin/env bash
# The install scenario: vgpu's .debs installed into a clean Debian 13 root and run from the installed files only
# (no checkout, no JDK of the build machine):
#   1. the packages (job-wrapper/packaging/build-debs.sh, or the ones in VGPU_DEBS)
#   2. a copy of the cached Debian 13 root with Slurm 24.11 (testbed/slurm/make-trixie-root.sh), no Java 25 in it
#   3. in that root (installed-root.sh): dpkg -i without Java 25 (the launcher says what it found), apt-get
#      brings the Java the package depends on from the Debian mirror, vgpu --version, the layout,
#      systemd-analyze verify of the unit, vgpu config check and render from /etc/vgpu/vgpu.conf
#   4. Slurm 24.11 in that root (testbed/slurm/up.sh with VGPU=/usr/bin/vgpu and the installed SPANK bridge):
#      scenario-installed.sh starts the tracker with its unit's ExecStart and runs a Java program under
#      /usr/bin/vgpu run -- java in a vgpu:3 job on 1 local and 2 borrowed GPUs (CPU emulation)
# Needs root, network to the Debian mirror, and a JDK 25 as JAVA_HOME (for the build and to compile the job's
# program: the root gets a JRE only). VGPU_TESTBED_DIR and VGPU_TESTBED_PORT_BASE as for testbed/slurm;
# VGPU_INSTALL_ROOT (default /var/tmp/vgpu-install-root) is removed at the end unless VGPU_KEEP_INSTALL_ROOT=yes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "$here/../.." && pwd)
root=${VGPU_INSTALL_ROOT:-/var/tmp/vgpu-install-root}
cache=${VGPU_SLURM_ROOT:-/var/cache/vgpu/trixie-slurm}
testbed=${VGPU_TESTBED_DIR:-/tmp/vgpu-testbed}
jdk=${JAVA_HOME:?set JAVA_HOME to a JDK 25, which compiles the program of the job}

say() { echo "== $*"; }
die() { echo "install-scenario: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (chroot, dpkg in the root, Slurm's daemons)"
[ ! -e "$root" ] || die "$root exists: remove it, or name another with VGPU_INSTALL_ROOT"

debs=${VGPU_DEBS:-}
if [ -z "$debs" ]; then
    debs=$(mktemp -d /tmp/vgpu-debs.XXXXXX)
    say "building the packages into $debs"
    "$checkout/job-wrapper/packaging/build-debs.sh" "$debs"
fi
ls "$debs"/vgpu_*.deb "$debs"/vgpu-spank-slurm24.11_*.deb >/dev/null || die "no vgpu and vgpu-spank-slurm24.11 .deb in $debs"

cleanup() {
    if [ -e "$testbed" ]; then
        env -u JAVA_HOME VGPU_SLURM_ROOT="$root" VGPU_TESTBED_SLURM=24.11 "$checkout/testbed/slurm/down.sh" || true
    fi
    rm -rf "$testbed-programs"
    if [ "${VGPU_KEEP_INSTALL_ROOT:-}" != yes ]; then
        rm -rf "$root"
    fi
}
trap cleanup EXIT

say "a clean Debian 13 root with Slurm 24.11 and no Java 25: a copy of $cache in $root"
"$checkout/testbed/slurm/make-trixie-root.sh" "$cache"
cp -a "$cache" "$root"
mkdir -p "$root/var/tmp/debs"
cp "$debs"/vgpu_*.deb "$debs"/vgpu-spank-slurm24.11_*.deb "$root/var/tmp/debs/"
cp "$here/installed-root.sh" "$root/var/tmp/installed-root.sh"
cp /etc/resolv.conf "$root/etc/resolv.conf"
unshare --mount --propagation private /bin/bash -c '
    set -e
    for path in /proc /sys /dev; do mount --rbind "$path" "$1$path"; done
    exec chroot "$1" /bin/bash /var/tmp/installed-root.sh
' installed-root "$root" || die "the installed files failed in the root (above)"

programs=$testbed-programs
rm -rf "$programs" && mkdir -p "$programs"
say "the job's Java program, compiled against the installed $root/usr/lib/vgpu/vgpu.jar"
"$jdk/bin/javac" -cp "$root/usr/lib/vgpu/vgpu.jar" -d "$programs" "$here/InstalledVectorAdd.java"

say "Slurm 24.11 in the root, with the installed vgpu and SPANK bridge (testbed/slurm/up.sh)"
# No JAVA_HOME: the root's Java is the one its packages brought (slurm-root.sh binds this machine's java on PATH
# into the root as JAVA_HOME; the launcher passes over it when it is older than 25).
export VGPU_SLURM_ROOT=$root VGPU_TESTBED_SLURM=24.11 VGPU=/usr/bin/vgpu VGPU_TESTBED_DIR=$testbed \
    VGPU_SPANK_PLUGIN=/usr/lib/x86_64-linux-gnu/slurm-wlm/vgpu_spank.so VGPU_INSTALLED_PROGRAMS=$programs
env -u JAVA_HOME "$checkout/testbed/slurm/up.sh"
env -u JAVA_HOME "$here/scenario-installed.sh"
say "install scenario passed"
