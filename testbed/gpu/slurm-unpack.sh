#!/usr/bin/env bash
# Run ON a GPU machine as root, from the repository root, with .gpu/slurm.tar.xz carried there (slurm-bundle.sh):
# puts Debian's Slurm at its own paths (/usr/sbin/slurmctld, /usr/lib/x86_64-linux-gnu/slurm-wlm, ...: none of them
# exist on the GPU machines' image), adds under /usr/local/lib/vgpu-slurm only the libraries this system lacks
# (registered with ldconfig, so nothing the system has is replaced), and says what the Slurm testbed still misses
# here (a C compiler and make for the SPANK bridge, python3, ss, openssl). Exit 0 when slurmctld, slurmd and the
# clients run and nothing is missing.
set -uo pipefail

[ "$(id -u)" -eq 0 ] || { echo "slurm-unpack: needs root (it writes under /usr)" >&2; exit 2; }
bundle=$(mktemp -d)
tar -C "$bundle" -xJf .gpu/slurm.tar.xz || { echo "slurm-unpack: cannot unpack .gpu/slurm.tar.xz (run slurm-bundle.sh here first)" >&2; exit 2; }
# -n: a file the system has stays as it is (coreutils 9.4 warns that -n may change; it still keeps the file)
cp -an "$bundle/root/." / 2>&1 | grep -v 'behavior of -n is non-portable' >&2
extra=/usr/local/lib/vgpu-slurm
mkdir -p "$extra"
added=()
for library in "$bundle"/libs/*; do
    name=$(basename "$library")
    if ! ldconfig -p | awk '{print $1}' | grep -qxF "$name"; then
        cp "$library" "$extra/"
        added+=("$name")
    fi
done
echo "$extra" >/etc/ld.so.conf.d/vgpu-slurm.conf
ldconfig
echo "slurm-unpack: libraries added (this system lacked them): ${added[*]:-none}"
status=0
unresolved=$(find /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch /usr/lib/x86_64-linux-gnu/slurm-wlm -type f \
    \( -perm -u+x -o -name '*.so*' \) -print0 | xargs -0 ldd 2>/dev/null | grep 'not found' | sort -u)
if [ -n "$unresolved" ]; then
    echo "slurm-unpack: libraries still not found:"
    echo "$unresolved"
    status=1
fi
# -V prints the version without reading a configuration (the clients' would look for one in DNS).
for command in slurmctld slurmd munged; do
    "$command" -V >/dev/null 2>&1 || { echo "slurm-unpack: $command does not run: $("$command" -V 2>&1 | head -n 2)"; status=1; }
done
for command in slurmstepd sbatch squeue sinfo scontrol scancel; do
    command -v "$command" >/dev/null || { echo "slurm-unpack: $command is missing"; status=1; }
done
echo "slurm-unpack: $(slurmctld -V 2>&1)"
for tool in cc make python3 ss openssl setpriv; do
    command -v "$tool" >/dev/null || { echo "slurm-unpack: missing here: $tool"; status=1; }
done
rm -rf "$bundle"
exit $status
