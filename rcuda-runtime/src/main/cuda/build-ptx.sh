#!/usr/bin/env bash
# Regenerates the PTX of the test kernels, which the runtime ships as a resource so that neither
# the build nor CI needs nvcc. Run after editing test_kernels.cu and commit the .cu, this script
# and the .ptx together.
#
# The flags are part of the contract with the Java twins (see the header of test_kernels.cu):
# no fused multiply-add, IEEE division and square root, denormals kept. compute_80 PTX is JIT-
# compiled by the driver for any GPU from Ampere on.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${NVCC:-/usr/local/bin/nvcc}"
out="$(dirname "$here")/resources/org/vgpu/kernels/test_kernels.ptx"

if ! command -v "$nvcc" >/dev/null 2>&1; then
    echo "build-ptx.sh: nvcc not found at $nvcc (set NVCC=/path/to/nvcc)" >&2
    exit 1
fi

mkdir -p "$(dirname "$out")"
"$nvcc" -arch=compute_80 --ptx \
    --fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
    -o "$out" "$here/test_kernels.cu"

# Approximate instructions would break bit-for-bit agreement with the twins; refuse them.
if grep -Eq '\b(fma|mad)\.[a-z0-9.]*f32|\b(rsqrt|ex2|lg2|sin|cos)\.approx|\bdiv\.(approx|full)|\.ftz\.' "$out"; then
    echo "build-ptx.sh: $out contains fused or approximate float instructions; check the flags" >&2
    exit 1
fi
echo "wrote $out"
