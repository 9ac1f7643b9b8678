#!/usr/bin/env bash
# Makes DIR a Debian 13 ("trixie") root with Debian's Slurm 24.11 and everything the testbed runs inside
# it (munge, a C compiler and Slurm's headers for the SPANK bridge, python3, iproute2, openssl, slurmdbd and
# MariaDB for accounting), for the testbed's VGPU_TESTBED_SLURM=24.11 (slurm-root.sh enters it with chroot).
# Cached: when DIR holds a finished root that has every package of the list it returns at once; a root of an
# earlier, shorter list gets the packages it lacks (apt-get in the root, no service started: the testbed starts
# its own daemons), and keeps the packages it had; a root left half made is made anew.
# Usage: make-trixie-root.sh [DIR]   (default: common.sh's VGPU_SLURM_ROOT, /var/cache/vgpu/trixie-slurm)
# Environment: VGPU_DEBIAN_MIRROR (default http://deb.debian.org/debian). Needs root and mmdebstrap
# (installed with apt-get where missing) or debootstrap.
set -euo pipefail

dir=${1:-${VGPU_SLURM_ROOT:-/var/cache/vgpu/trixie-slurm}}
mirror=${VGPU_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=trixie
packages=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm-dev slurm-wlm-basic-plugins-dev munge
    gcc make libc6-dev python3 iproute2 openssl procps bc slurmdbd mariadb-server libmpj-java)
# The stamp: the suite, then every package the finished root has, one word each.
stamp_file=$dir/.vgpu-trixie-root

die() {
    echo "make-trixie-root: $*" >&2
    exit 1
}

# missing_packages: the packages of the list that the root's stamp does not name, one a line.
missing_packages() {
    local had
    read -r -a had <"$stamp_file"
    comm -23 <(printf '%s\n' "${packages[@]}" | sort -u) <(printf '%s\n' "${had[@]:1}" | sort -u)
}

if [ -f "$stamp_file" ] && [ "$(cut -d ' ' -f 1 "$stamp_file")" = "$suite" ] && [ -z "$(missing_packages)" ]; then
    exit 0
fi
[ "$(id -u)" -eq 0 ] || die "making a Debian root in $dir needs root"
if [ -f "$stamp_file" ] && [ "$(cut -d ' ' -f 1 "$stamp_file")" = "$suite" ]; then
    mapfile -t missing < <(missing_packages)
    echo "make-trixie-root: adding ${missing[*]} to the root in $dir"
    # A package's maintainer script would start its service (MariaDB, slurmdbd) inside the root; policy-rc.d
    # refuses every start while apt-get runs.
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod 755 "$dir/usr/sbin/policy-rc.d"
    # mmdebstrap leaves no package lists in the root.
    if ! { chroot "$dir" timeout 600 apt-get update -q >/dev/null \
        && chroot "$dir" /usr/bin/env DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -q "${missing[@]}" >/dev/null; }; then
        rm -f "$dir/usr/sbin/policy-rc.d"
        die "apt-get install in the root $dir failed (is the mirror reachable? remove $dir to make it anew)"
    fi
    rm -f "$dir/usr/sbin/policy-rc.d"
    echo "$(cat "$stamp_file") ${missing[*]}" >"$stamp_file"
    exit 0
fi
[ -e "$dir" ] && [ ! -f "$stamp_file" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] \
    && ! [ -f "$dir.partial" ] \
    && die "$dir exists and is not a root this script made; choose another directory (VGPU_SLURM_ROOT)"

# Before minutes of work: can the mirror be reached, and does it have the suite?
release=$mirror/dists/$suite/Release
if ! timeout 30 python3 - "$release" <<'PROBE' 2>/dev/null; then
import sys, urllib.request
urllib.request.urlopen(sys.argv[1], timeout=25).read(64)
PROBE
    die "the Debian mirror does not answer for $release (no network, or another mirror: set VGPU_DEBIAN_MIRROR)"
fi

if ! command -v mmdebstrap >/dev/null && ! command -v debootstrap >/dev/null; then
    echo "make-trixie-root: installing mmdebstrap"
    timeout 600 apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q mmdebstrap >/dev/null \
        || die "could not install mmdebstrap (apt-get install mmdebstrap)"
fi

include=$(IFS=,; echo "${packages[*]}")
# A partial root of an earlier, interrupted call is removed; the marker says this script made it.
mkdir -p "$(dirname "$dir")"
touch "$dir.partial"
rm -rf "$dir"
echo "make-trixie-root: making a Debian $suite root with Slurm in $dir from $mirror (a few minutes)"
started=$SECONDS
if command -v mmdebstrap >/dev/null; then
    timeout 1800 mmdebstrap --quiet --variant=minbase --include="$include" "$suite" "$dir" "$mirror" \
        || die "mmdebstrap of $suite from $mirror failed (see its messages above)"
else
    timeout 1800 debootstrap --variant=minbase --include="$include" "$suite" "$dir" "$mirror" \
        || die "debootstrap of $suite from $mirror failed (see $dir/debootstrap/debootstrap.log)"
fi
chroot "$dir" slurmctld -V >/dev/null || die "the new root in $dir has no working slurmctld"
echo "$suite ${packages[*]}" >"$stamp_file"
rm -f "$dir.partial"
echo "make-trixie-root: $(chroot "$dir" slurmctld -V) in $dir, made in $((SECONDS - started)) s"
