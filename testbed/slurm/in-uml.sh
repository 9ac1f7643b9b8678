#!/usr/bin/env bash
# Runs one command under a kernel of its own that has cgroup v2 only: Debian's User-Mode Linux (user-mode-linux,
# installed if missing), booted with this machine's file system as its root (hostfs), one cgroup2 hierarchy at
# /sys/fs/cgroup and no v1 hierarchy at all. For Slurm's cgroup/v2 plugin on a host whose kernel has v1
# hierarchies: that kernel lists them in every process's /proc/PID/cgroup, before the "0::" line, whatever mount
# or cgroup namespace the process is in, and slurmd stops on such a file ("fatal: Hybrid mode is not supported").
# The guest kernel is a real one: its own cgroups, its own BPF device programs, its own loopback network; it sees
# this machine's files (the checkout, /tmp, the Debian 13 root), so what the command leaves there stays after it.
#
#     testbed/slurm/in-uml.sh COMMAND [ARG...]
#
# The command runs as root in the repository root with the environment of the caller (VGPU_*, JAVA_HOME,
# SLURM_CONF...); its output comes through, and its exit status is this script's. The guest has one CPU and
# VGPU_UML_MEMORY (default 3G) of memory; VGPU_UML_TIMEOUT (seconds, default 1500) bounds the whole run. Needs root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
say() { echo "in-uml: $*" >&2; }

[ "$#" -gt 0 ] || { say "usage: $0 COMMAND [ARG...]"; exit 2; }
[ "$(id -u)" -eq 0 ] || { say "needs root (the guest mounts file systems and runs Slurm's daemons as root)"; exit 2; }
if ! command -v linux.uml >/dev/null; then
    say "installing Debian's user-mode-linux"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q user-mode-linux >/dev/null \
        || { say "could not install user-mode-linux"; exit 2; }
fi

work=$(mktemp -d /tmp/vgpu-uml.XXXXXX)
trap 'rm -rf "$work"' EXIT
# The caller's environment, as the guest's init sees it (it starts with none).
export -p | grep -v -E '^declare -x (BASH_[A-Z_]*|HOME|OLDPWD|PWD|SHLVL|TERM|_)=' >"$work/env"
printf '%q ' "$@" >"$work/command"
cat >"$work/init" <<'INIT'
#!/bin/bash
# The guest's first process: the file systems and network a Debian system would have, then the command.
work=$(dirname "$0")
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t cgroup2 cgroup2 /sys/fs/cgroup
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
ln -sfn /proc/self/fd /dev/fd
ln -sfn /proc/self/fd/0 /dev/stdin
ln -sfn /proc/self/fd/1 /dev/stdout
ln -sfn /proc/self/fd/2 /dev/stderr
mount -t tmpfs tmpfs /dev/shm
# This machine's /run stays its own; the Debian 13 root's too (the bridge keeps its grant records there).
mount -t tmpfs tmpfs /run
trixie=${VGPU_SLURM_ROOT:-/var/cache/vgpu/trixie-slurm}
[ ! -d "$trixie/run" ] || mount -t tmpfs tmpfs "$trixie/run"
ip link set lo up
# glibc's getaddrinfo (AI_ADDRCONFIG, as Slurm asks it) finds no IPv4 name while 127.0.0.1 is the only address;
# one from the documentation range makes the host's names in /etc/hosts resolve.
ip addr add 192.0.2.1/32 dev lo
hostname "$(cat "$work/hostname")"
source "$work/env"
# Every system call and page fault of the guest's processes goes through the host's ptrace: a JVM (vgpu's
# launcher, the lenders) starts in about 20 s with its quickest settings, 45 s without.
export JDK_JAVA_OPTIONS=${JDK_JAVA_OPTIONS:--XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData}
cd "$(cat "$work/dir")"
echo "in-uml: kernel $(uname -r) (User-Mode Linux), /proc/self/cgroup: $(paste -sd ' ' /proc/self/cgroup)," \
    "cgroup2 controllers: $(cat /sys/fs/cgroup/cgroup.controllers)"
status=0
eval "$(cat "$work/command")" </dev/null || status=$?
echo "$status" >"$work/status"
sync
echo o >/proc/sysrq-trigger
sleep 60
INIT
chmod +x "$work/init"
hostname >"$work/hostname"
echo "$PWD" >"$work/dir"

# The console (the command's output) on this script's standard output; the kernel's own messages left out.
status=0
timeout "${VGPU_UML_TIMEOUT:-1500}" linux.uml mem="${VGPU_UML_MEMORY:-3G}" root=/dev/root rootfstype=hostfs \
    rootflags=/ rw quiet loglevel=1 init="$work/init" con=null con0=null,fd:1 </dev/null || status=$?
if [ ! -f "$work/status" ]; then
    say "the guest ended without the command's exit status (linux.uml exit $status; timeout: ${VGPU_UML_TIMEOUT:-1500} s)"
    exit 1
fi
exit "$(cat "$work/status")"
