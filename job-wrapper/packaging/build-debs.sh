#!/bin/bash
# Builds vgpu's Debian packages from a built checkout (mvn -q -DskipTests package first):
#   job-wrapper/packaging/build-debs.sh [OUT]      (OUT: where the .debs go; default job-wrapper/target/debs)
#
#   vgpu                      the launcher (/usr/bin/vgpu), vgpu.jar and vgpu's libcuda.so.1 under /usr/lib/vgpu,
#                             the tracker's systemd unit, /etc/vgpu/vgpu.conf (a conffile), the holders' log folder
#   vgpu-spank-slurmXX.YY     the SPANK bridge built against Slurm XX.YY's headers, in Debian's Slurm plugin folder;
#                             one per Slurm: 22.05 from this machine's /usr/include/slurm (libslurm-dev), 24.11
#                             built inside the Debian 13 root of testbed/slurm/make-trixie-root.sh when it exists
#                             (VGPU_SLURM_ROOT names another; VGPU_SLURM_ROOT=none builds no second one)
#
# The version is the one vgpu --version prints (the build's), made a Debian version: 0.1.0-SNAPSHOT built from
# commit 474d951... on 2026-11-29 is 0.1.0~SNAPSHOT+20261129.474d951656a1. Needs dpkg-deb, make and a C compiler.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
checkout=$(cd "$here/../.." && pwd)
out=$(mkdir -p "${1:-$checkout/job-wrapper/target/debs}" && cd "${1:-$checkout/job-wrapper/target/debs}" && pwd)
slurm_root=${VGPU_SLURM_ROOT:-/var/cache/vgpu/trixie-slurm}
arch=$(dpkg --print-architecture)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)

die() { echo "build-debs: $*" >&2; exit 1; }
say() { echo "build-debs: $*"; }

jar=$checkout/job-wrapper/target/vgpu.jar
[ -f "$jar" ] || die "$jar is missing; build it first: mvn -q -DskipTests package"
command -v dpkg-deb >/dev/null || die "dpkg-deb is missing (apt-get install dpkg-dev)"

# build_value KEY: what the jar's build wrote (vgpu --version prints the same)
build_value() {
    unzip -p "$jar" org/vgpu/common/build-info.properties | sed -n "s/^$1=//p"
}
version=$(build_value version)
commit=$(build_value commit)
built=$(build_value built)
[ -n "$version" ] || die "$jar has no build information (org/vgpu/common/build-info.properties); rebuild it"
short=${commit:0:12}
[ "$commit" = unknown ] && short=unknown
case $commit in *-dirty) short=$short.dirty ;; esac
debversion=${version/-/\~}+${built:0:4}${built:5:2}${built:8:2}.$short
say "vgpu $version (commit $commit, built $built) -> Debian version $debversion"

# control_fields PACKAGE: the control fields every package of this build shares, for the package in $root
control_fields() {
    printf '%s\n' "Package: $1" "Version: $debversion" "Architecture: $arch" \
        "Maintainer: vgpu developers <vgpu@localhost>" "Section: admin" "Priority: optional" \
        "Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)"
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- vgpu ------------------------------------------------------------------------------------------------
libcuda=$checkout/rcuda-runtime/vgpu-libcuda/build/libcuda.so.1
if [ ! -f "$libcuda" ]; then
    make -s -C "$checkout/rcuda-runtime/vgpu-libcuda" >"$work/libcuda.log" 2>&1 \
        || die "building vgpu's libcuda.so.1 failed: $(tail -n 5 "$work/libcuda.log")"
fi
root=$work/vgpu
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/lib/vgpu/bin" "$root/usr/lib/vgpu/lib" "$root/etc/vgpu" \
    "$root/usr/lib/systemd/system" "$root/usr/lib/tmpfiles.d" "$root/usr/share/doc/vgpu/examples"
install -m 0755 "$checkout/job-wrapper/bin/vgpu" "$root/usr/lib/vgpu/bin/vgpu"
ln -s ../lib/vgpu/bin/vgpu "$root/usr/bin/vgpu"
install -m 0644 "$jar" "$root/usr/lib/vgpu/vgpu.jar"
# The folder LibcudaLocation looks in beside vgpu.jar: vgpu run puts it first on a program's LD_LIBRARY_PATH.
install -m 0644 "$libcuda" "$root/usr/lib/vgpu/lib/libcuda.so.1"
install -m 0644 "$here/vgpu/vgpu-tracker.service" "$root/usr/lib/systemd/system/vgpu-tracker.service"
install -m 0644 "$here/vgpu/tmpfiles.conf" "$root/usr/lib/tmpfiles.d/vgpu.conf"
install -m 0644 "$here/vgpu/vgpu.conf" "$root/etc/vgpu/vgpu.conf"
install -m 0644 "$here/vgpu/vgpu.conf" "$root/usr/share/doc/vgpu/examples/vgpu.conf"
install -m 0644 "$checkout/docs/admin/install.md" "$root/usr/share/doc/vgpu/install.md"
install -m 0644 "$checkout/site-config/README.md" "$root/usr/share/doc/vgpu/site-config.md"
install -m 0755 "$here/vgpu/postinst" "$here/vgpu/prerm" "$here/vgpu/postrm" "$root/DEBIAN/"
echo /etc/vgpu/vgpu.conf >"$root/DEBIAN/conffiles"
{
control_fields vgpu
cat <<EOF
Depends: openjdk-25-jre-headless | temurin-25-jre | temurin-25-jdk | java-runtime-headless (>= 25), libc6 (>= 2.34)
Recommends: slurm-client
Suggests: vgpu-spank, fontconfig, fonts-dejavu-core
Homepage: file:///usr/share/doc/vgpu/install.md
Description: Slurm-integrated, job-level GPU borrowing
 A job asks sbatch --gres=vgpu:N and runs at once on the GPUs of its node and GPUs borrowed from
 idle ones elsewhere; each borrowed GPU moves onto a local GPU when one frees up.
 .
 This package: the vgpu command (/usr/bin/vgpu, Java 25), the idle-GPU tracker's systemd unit
 (vgpu-tracker.service, for the slurmctld host), vgpu's libcuda.so.1 for CUDA driver-API programs
 under vgpu run, and /etc/vgpu/vgpu.conf. Install it on every node; the SPANK bridge comes in
 the vgpu-spank-slurmXX.YY package of the nodes' Slurm.
 Built from commit $commit on $built.
EOF
} >"$root/DEBIAN/control"
dpkg-deb --root-owner-group --build "$root" "$out/vgpu_${debversion}_$arch.deb" >/dev/null
say "$out/vgpu_${debversion}_$arch.deb"

# --- vgpu-spank-slurmXX.YY -------------------------------------------------------------------------------
# spank_package INCLUDE [CHROOT]: the bridge built against the Slurm headers under INCLUDE (inside CHROOT, with
# that root's compiler, when given), packaged for that Slurm's major release.
spank_package() {
    local include=$1 chroot=${2:-} slurm= build where
    local number
    number=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-fA-F]*\)$/\1/p' "$chroot$include/slurm/slurm_version.h")
    [ -n "$number" ] && slurm=$(printf '%d.%02d' $((16#$number >> 16 & 255)) $((16#$number >> 8 & 255)))
    [ -n "$slurm" ] || die "$chroot$include/slurm/slurm_version.h names no Slurm version"
    where=$chroot/var/tmp/vgpu-spank-build.$$
    build=$where
    rm -rf "$where"
    mkdir -p "$where"
    cp -r "$checkout/slurm-spank-bridge"/{Makefile,vgpu_spank.map,src,contract,check} "$where/"
    if [ -n "$chroot" ]; then
        build=${where#"$chroot"}
        chroot "$chroot" make -s -C "$build" SLURM_INCLUDE="$include" vgpu_spank.so >"$work/spank-$slurm.log" 2>&1 \
            || { rm -rf "$where"; die "building the SPANK bridge for Slurm $slurm in $chroot failed: $(tail -n 5 "$work/spank-$slurm.log")"; }
    else
        make -s -C "$build" SLURM_INCLUDE="$include" vgpu_spank.so >"$work/spank-$slurm.log" 2>&1 \
            || { rm -rf "$where"; die "building the SPANK bridge for Slurm $slurm failed: $(tail -n 5 "$work/spank-$slurm.log")"; }
    fi
    local name=vgpu-spank-slurm$slurm next
    next=${slurm%%.*}.$(printf '%02d' $((10#${slurm#*.} + 1)))
    root=$work/$name
    install -d "$root/DEBIAN" "$root/usr/lib/$multiarch/slurm-wlm" "$root/usr/share/doc/$name"
    install -m 0755 "$where/vgpu_spank.so" "$root/usr/lib/$multiarch/slurm-wlm/vgpu_spank.so"
    rm -rf "$where"
    install -m 0644 "$checkout/slurm-spank-bridge/README.md" "$root/usr/share/doc/$name/README.md"
    {
    control_fields "$name"
    cat <<EOF
Depends: libc6, slurm-wlm-basic-plugins (>= $slurm), slurm-wlm-basic-plugins (<< $next), vgpu (= $debversion)
Provides: vgpu-spank
Conflicts: vgpu-spank
Replaces: vgpu-spank
Description: vgpu's SPANK bridge for Slurm $slurm
 The SPANK plugin that gives each vgpu job its assembly of local and borrowed GPUs from the vgpu
 tracker, admits a lent GPU into its holder's devices, and refuses to start a vgpu job without
 its GPUs. Built against Slurm $slurm's headers: Slurm loads no plugin of another release.
 Installed as /usr/lib/$multiarch/slurm-wlm/vgpu_spank.so; vgpu config render --what
 plugstack.conf.d/vgpu.conf writes the line that loads it, for /etc/slurm/plugstack.conf.d/vgpu.conf.
EOF
    } >"$root/DEBIAN/control"
    dpkg-deb --root-owner-group --build "$root" "$out/${name}_${debversion}_$arch.deb" >/dev/null
    say "$out/${name}_${debversion}_$arch.deb"
}

if [ -r /usr/include/slurm/spank.h ]; then
    spank_package /usr/include
else
    say "no SPANK bridge for this machine's Slurm: /usr/include/slurm/spank.h is missing (libslurm-dev)"
fi
if [ "$slurm_root" != none ] && [ -r "$slurm_root/usr/include/slurm/spank.h" ]; then
    spank_package /usr/include "$slurm_root"
elif [ "$slurm_root" != none ]; then
    say "no SPANK bridge for Slurm 24.11: $slurm_root/usr/include/slurm/spank.h is missing" \
        "(testbed/slurm/make-trixie-root.sh makes that root)"
fi
