#!/bin/sh
# Writes what `vgpu --version` and the tracker's vgpu_build_info metric say about this build:
#   sh generate.sh VERSION FILE   FILE: org/vgpu/common/build-info.properties (Maven: vgpu-common, generate-resources)
# commit: the checkout's HEAD, with "-dirty" when tracked files differ from it; "unknown" outside a git checkout
# (a source tarball). VGPU_BUILD_COMMIT names it instead (a package built from an exported tree).
# built: SOURCE_DATE_EPOCH when set (reproducible builds), else now; UTC, ISO 8601. A FILE that already names
# this version and commit is left as it is (its date the first build of them), so that a rebuild without a new
# commit changes nothing in vgpu-common and the modules above it need not compile again.
set -eu
case $# in
2) version=$1 out=$2 ;;
*) echo "usage: generate.sh VERSION FILE" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")" && pwd)
commit=${VGPU_BUILD_COMMIT:-}
if [ -z "$commit" ]; then
    if commit=$(git -C "$here" rev-parse HEAD 2>/dev/null); then
        git -C "$here" diff --quiet HEAD -- 2>/dev/null || commit=$commit-dirty
    else
        commit=unknown
    fi
fi
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && [ -f "$out" ] \
    && [ "$(sed -n 's/^version=//p; s/^commit=//p' "$out")" = "$(printf '%s\n%s' "$version" "$commit")" ]; then
    exit 0
fi
if [ -n "${SOURCE_DATE_EPOCH:-}" ]; then
    built=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
else
    built=$(date -u +%Y-%m-%dT%H:%M:%SZ)
fi
mkdir -p "$(dirname "$out")"
tmp=$out.tmp.$$
trap 'rm -f "$tmp"' EXIT
printf 'version=%s\ncommit=%s\nbuilt=%s\n' "$version" "$commit" "$built" >"$tmp"
mv "$tmp" "$out"
