# Which Slurm the testbed runs (sourced by common.sh first, not run). VGPU_TESTBED_SLURM=22.05 (the default):
# the machine's own Debian 12 packages. VGPU_TESTBED_SLURM=24.11: Debian 13's packages in a root of their own
# (make-trixie-root.sh; VGPU_SLURM_ROOT names it), which the script that sourced this file re-enters at once:
# a mount namespace of its own binds /proc, /sys, /dev, /tmp, /etc/hosts, the checkout and the JDK into the
# root at the same paths, and chroot runs the script there again (a script outside the checkout and /tmp
# is not found there), with the same arguments, in the same
# directory. Everything the script then starts (Slurm's daemons and clients, the lenders, the tracker, the
# jobs) runs on 24.11, and a daemon keeps that namespace alive after the script ends; a later script
# enters a namespace of its own, with the same files. Needs root (chroot, mount).
# shellcheck shell=bash

TESTBED_SLURM=${VGPU_TESTBED_SLURM:-22.05}
SLURM_ROOT=${VGPU_SLURM_ROOT:-/var/cache/vgpu/trixie-slurm}

# enter_slurm_root ARG...: runs the script that sourced this file again inside the root, with ARG...
enter_slurm_root() {
    local script here checkout java_home
    script=$(readlink -f "${BASH_SOURCE[-1]}")
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    checkout=$(cd "$here/../.." && pwd)
    if [ "$(id -u)" -ne 0 ]; then
        echo "testbed: VGPU_TESTBED_SLURM=$TESTBED_SLURM runs Slurm in a Debian root with chroot, which needs root" >&2
        exit 1
    fi
    "$here/make-trixie-root.sh" "$SLURM_ROOT" >&2 || exit 1
    # The launcher runs on this JDK inside the root; the root has none of its own.
    java_home=${JAVA_HOME:-}
    if [ -z "$java_home" ] && command -v java >/dev/null; then
        java_home=$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")
    fi
    export JAVA_HOME=$java_home VGPU_INSIDE_SLURM_ROOT=$SLURM_ROOT
    exec unshare --mount --propagation private /bin/bash -c '
        set -e
        root=$1 work=$2 checkout=$3 script=$4
        shift 4
        for path in /proc /sys /dev /tmp "$checkout" ${JAVA_HOME:+"$JAVA_HOME"}; do
            mkdir -p "$root$path"
            mount --rbind "$path" "$root$path"
        done
        touch "$root/etc/hosts"
        mount --bind /etc/hosts "$root/etc/hosts"
        # VGPU_TESTBED_CGROUPS=v2: the root sees one cgroup2 hierarchy at /sys/fs/cgroup and no v1 one, as a
        # distribution of today mounts it, for Slurm'"'"'s cgroup/v2 plugin (a hybrid host keeps its v1 controllers
        # outside this namespace).
        if [ "${VGPU_TESTBED_CGROUPS:-no}" = v2 ]; then
            umount -R "$root/sys/fs/cgroup"
            mount -t cgroup2 cgroup2 "$root/sys/fs/cgroup"
        fi
        exec chroot "$root" /bin/bash -c '\''cd "$1" 2>/dev/null || cd /; shift; exec /bin/bash "$@"'\'' enter "$work" "$script" "$@"
    ' enter-slurm-root "$SLURM_ROOT" "$PWD" "$checkout" "$script" "$@"
}

case $TESTBED_SLURM in
    22.05) ;;
    24.11)
        if [ "${VGPU_INSIDE_SLURM_ROOT:-}" != "$SLURM_ROOT" ]; then
            enter_slurm_root "$@"
        fi
        ;;
    *)
        echo "testbed: VGPU_TESTBED_SLURM is 22.05 (this machine's Debian 12 packages) or 24.11 (Debian 13's, in a root), not $TESTBED_SLURM" >&2
        exit 2
        ;;
esac
