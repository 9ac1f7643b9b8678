#!/usr/bin/env bash
# Run HERE (Debian 12 with Debian's Slurm installed: testbed/slurm/install-slurm.sh), before sending the checkout to
# a GPU machine, which has no Slurm, no package manager access and no network. Packs into .gpu/slurm.tar.xz (a
# path prepare.sh leaves alone; carry .gpu) what the Slurm testbed needs of Debian's packages: the files of
# slurmctld, slurmd, slurm-client, slurm-wlm-basic-plugins, libslurm-dev (spank.h, for the SPANK bridge) and
# munge, at their own paths under root/ (and iproute2's ss), and under libs/ every library those programs and plugins
# load, taken from this machine (slurm-unpack.sh there adds only those its system lacks). About 6 MiB.
set -euo pipefail

top=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
packages=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm-dev munge)
for package in "${packages[@]}"; do
    dpkg -s "$package" >/dev/null 2>&1 \
        || { echo "slurm-bundle: $package is not installed here (run testbed/slurm/install-slurm.sh as root)" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bundle/root" "$work/bundle/libs"
dpkg -L "${packages[@]}" | sort -u | while read -r path; do
    case $path in
        /usr/share/doc/* | /usr/share/man/* | /usr/share/lintian/* | /etc/init.d/* | /lib/systemd/*) continue ;;
    esac
    if [ -f "$path" ] || [ -L "$path" ]; then
        mkdir -p "$work/bundle/root$(dirname "$path")"
        cp -a "$path" "$work/bundle/root$path"
    fi
done
# The daemons' names are update-alternatives links (slurmctld -> slurmctld-wlm), which dpkg -L does not list; ss
# (iproute2) is the one tool of the testbed the GPU machines' image lacks.
for link in /usr/sbin/slurmctld /usr/sbin/slurmd /usr/sbin/slurmstepd; do
    ln -s "$(basename "$(readlink -f "$link")")" "$work/bundle/root$link"
done
mkdir -p "$work/bundle/root/usr/bin"
cp -L "$(command -v ss)" "$work/bundle/root/usr/bin/ss"
# Every library an executable or plugin of the bundle loads, but glibc's own, which the GPU machine's newer glibc
# replaces.
find "$work/bundle/root" -type f \( -perm -u+x -o -name '*.so*' \) -print0 \
    | xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u \
    | grep -Ev '/(libc|libm|libpthread|libdl|librt|libresolv|libutil|ld-linux-x86-64)\.so' \
    | grep -v '/slurm-wlm/' | while read -r library; do
        cp -L "$library" "$work/bundle/libs/"
    done
mkdir -p "$top/.gpu"
tar -C "$work/bundle" -cJf "$top/.gpu/slurm.tar.xz" .
echo "slurm-bundle: $(slurmctld -V) and $(ls "$work/bundle/libs" | wc -l) libraries in $top/.gpu/slurm.tar.xz" \
    "($(du -h "$top/.gpu/slurm.tar.xz" | cut -f1))"
