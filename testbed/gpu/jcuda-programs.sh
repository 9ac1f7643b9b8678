#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here (the JCuda
# interposer's test classes hold the JCuda programs, packages jcudaprograms and jcuda.*.samples; the integration tests'
# the check, org.vgpu.job.JCudaProgramsOnGpu, whose PROGRAMS lists the programs run, docs/jcuda-programs.md too).
#   1. nvcc builds each program's PTX from testbed/vgpu-integration-tests/src/test/resources/jcudaprograms/*.cu
#      (compute_80) into $OUT/ptx (the CPU emulation in CI needs only the kernels' declarations; a GPU needs these).
#   2. Each of the seventeen programs runs with plain JCuda, then unmodified through vgpu run -- on GPU 0 natively, on
#      two workers of the same GPU in other processes (remote), and starting remote, moved onto GPU 0 through the
#      agent's socket once it has data on the GPU (remote->native mid-run); each vgpu run must print exactly what
#      plain JCuda printed. One line per program, e.g.
#        JCudaVectorAdd: plain JCuda PASSED, native equal, remote equal, remote->native mid-run equal (ok vgpu 0 moved ...)
#      Where plain JCuda cannot run a program there, the native vgpu run is the reference and must pass the program's
#      own CPU check: the NVRTC program where no libnvrtc.so.12 can be had (JCuda 12.6's NVRTC binding needs it; on a
#      CUDA 13 machine this script builds one that forwards to .13, which needs gcc) and, on a machine of one GPU, the
#      two-device program (vgpu gives it two vGPUs there):
#        JCudaNvrtc: plain JCuda cannot run here (...UnsatisfiedLinkError...), native PASSED its CPU check (the
#        reference), remote equal, remote->native mid-run equal (...)
#   3. The interposer path's cost against plain JCuda (jcudaprograms.JCudaCallCost: an asynchronous launch, a 4 KiB copy
#      after 50,000 untimed copies),
#      as the median of the vgpu/plain ratios of 5 interleaved pairs of runs:
#        cost (vgpu native / plain JCuda, median of 5 interleaved pairs): async launch R1, 4 KiB copy R2 (goal <= 1.05)
#        cost of the 4 KiB copy, split (...): vgpu's runtime R3 + the shim R4; the JVM's first copies, vgpu / plain R6
#      (R3 + R4 = R2; R6 is the not yet compiled path, which the old figure timed).
# The last line is "PASS: jcuda programs" (exit 0) when every program passed with plain JCuda, every vgpu run was
# equal to it and every move landed while the program ran; the cost ratios are figures to read, not a pass condition.
# Arguments: how often each program repeats its computation (default 20), pairs of cost runs (default 5).
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre. Output also in $OUT/jcuda-programs.log.
set -uo pipefail

script_name=jcuda-programs
source "$(dirname "$0")/steps.sh"
mkdir -p "$out/ptx"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
for cu in testbed/vgpu-integration-tests/src/test/resources/jcudaprograms/*.cu; do
    name=$(basename "$cu" .cu)
    "$nvcc" -ptx -arch=compute_80 -o "$out/ptx/$name.ptx" "$cu" || { echo "jcuda-programs: nvcc failed on $cu" >&2; exit 2; }
done
echo "jcuda-programs: PTX built by $("$nvcc" --version | tail -1) into $out/ptx"

# JCuda 12.6's NVRTC binding needs libnvrtc.so.12 (symbols of that version); on a CUDA 13 machine plain JCuda runs
# the NVRTC program through a forwarding libnvrtc.so.12 built here (nvrtc12-on-13.c), which only the plain runs find
# first: vgpu's runs load libnvrtc.so.13 by that name. Without a C compiler the NVRTC program keeps its fallback.
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so\.12 ' && command -v gcc >/dev/null; then
    shim=$out/nvrtc12
    mkdir -p "$shim"
    printf 'libnvrtc.so.12 {\n    global: nvrtc*;\n    local: *;\n};\n' >"$shim/nvrtc12.map"
    if gcc -O2 -shared -fPIC -o "$shim/libnvrtc.so.12" testbed/gpu/nvrtc12-on-13.c \
        -Wl,--version-script="$shim/nvrtc12.map" -Wl,-soname,libnvrtc.so.12 -ldl; then
        export VGPU_PLAIN_JCUDA_LIBRARY_PATH=$shim
        echo "jcuda-programs: plain JCuda's NVRTC binding runs on CUDA 13's NVRTC through $shim/libnvrtc.so.12"
    fi
fi

"$JAVA" --enable-native-access=ALL-UNNAMED -cp ".gpu/lib/*:.gpu/test/classes:$junit_jar" org.vgpu.job.JCudaProgramsOnGpu \
    "$out/ptx" "${1:-20}" "${2:-5}" 2>&1 | tee "$out/jcuda-programs.log"
exit "${PIPESTATUS[0]}"
