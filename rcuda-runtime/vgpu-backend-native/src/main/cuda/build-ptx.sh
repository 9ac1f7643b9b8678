#!/usr/bin/env bash
# Regenerates the PTX the runtime ships as resources, so that neither the build nor CI needs nvcc:
#   vgpu-test-workloads: test_kernels.cu -> org/vgpu/kernels/test_kernels.ptx     (benchmark and workload kernels)
#   vgpu-backend-native: copy_kernels.cu -> org/vgpu/nativegpu/copy_kernels.ptx   (mem-sync's gather and scatter)
# Run after editing either .cu file and commit the .cu, this script and the .ptx together.
#
# The flags are part of the contract with the Java twins of the test kernels (see the header of
# test_kernels.cu): no fused multiply-add, IEEE division and square root, denormals kept. The copy
# kernels have no float arithmetic, so the same flags do them no harm. compute_80 PTX is JIT-
# compiled by the driver for any GPU from Ampere on.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
nvcc="${NVCC:-/usr/local/bin/nvcc}"
native="$(dirname "$here")"
workloads="$here/../../../../vgpu-test-workloads/src/main"

if ! command -v "$nvcc" >/dev/null 2>&1; then
    echo "build-ptx.sh: nvcc not found at $nvcc (set NVCC=/path/to/nvcc)" >&2
    exit 1
fi

build() {
    local source=$1 out=$2
    mkdir -p "$(dirname "$out")"
    "$nvcc" -arch=compute_80 --ptx \
        --fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
        -o "$out" "$source"
    # Approximate instructions would break bit-for-bit agreement with the twins; refuse them.
    if grep -Eq '\b(fma|mad)\.[a-z0-9.]*f32|\b(rsqrt|ex2|lg2|sin|cos)\.approx|\bdiv\.(approx|full)|\.ftz\.' "$out"; then
        echo "build-ptx.sh: $out contains fused or approximate float instructions; check the flags" >&2
        exit 1
    fi
    echo "wrote $out"
}

build "$workloads/cuda/test_kernels.cu" "$workloads/resources/org/vgpu/kernels/test_kernels.ptx"
build "$here/copy_kernels.cu" "$native/resources/org/vgpu/nativegpu/copy_kernels.ptx"
