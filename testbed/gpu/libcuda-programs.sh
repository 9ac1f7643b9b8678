#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root (no Java needed): builds vgpu's libcuda.so.1 and the
# CUDA programs of rcuda-runtime/vgpu-libcuda/tests/programs there, then runs each program twice on
# the same GPU, plainly and with vgpu's libcuda.so.1 found first (LD_LIBRARY_PATH), and compares their
# output. Writes to $OUT (default .gpu/out):
#   libcuda-programs.log   per program: equal or DIFFERENT, and the two outputs when they differ
#   libcuda-reports.tar.gz the library's report for each program (entry points called, export tables)
#   libcuda-bench.log      the latency and bandwidth bench both ways, and the ratios; the round trip to
#                          another process over a Unix socket and a spinning shared-memory ring
# The PyTorch program runs where `python3 -c "import torch"` works.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$top"
out=${OUT:-$top/.gpu/out}
mkdir -p "$out"
lib=rcuda-runtime/vgpu-libcuda
work=$(mktemp -d)
log=$out/libcuda-programs.log
failed=0
source "$top/testbed/gpu/latency-ratios.sh"

make -s -C "$lib" all programs bench JAVA_HOME="$top/.gpu/jdk" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 2; }
arch=(-gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90)
nvcc "${arch[@]}" -o "$work/cublas_gemm" "$lib/tests/programs/cublas_gemm.cu" -lcublas &&
    nvcc "${arch[@]}" -o "$work/cufft_transform" "$lib/tests/programs/cufft_transform.cu" -lcufft &&
    gcc -O2 -o "$work/ipc_bench" "$lib/tests/programs/ipc_bench.c" || exit 2
mkdir -p "$work/reports"

# both NAME COMMAND...: runs COMMAND plainly and through the library; compares stdout and the status.
both() {
    local name=$1
    shift
    local plain_status=0 vgpu_status=0
    timeout 300 "$@" >"$work/$name.plain" 2>"$work/$name.plain.err" || plain_status=$?
    LD_LIBRARY_PATH="$top/$lib/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" VGPU_LIBCUDA_REPORT="$work/reports/$name.%p.txt" \
        timeout 300 "$@" >"$work/$name.vgpu" 2>"$work/$name.vgpu.err" || vgpu_status=$?
    local reports
    reports=$(ls "$work/reports/$name".*.txt 2>/dev/null | wc -l)
    if [ "$plain_status" -eq 0 ] && [ "$vgpu_status" -eq 0 ] && cmp -s "$work/$name.plain" "$work/$name.vgpu" && [ "$reports" -ge 1 ]; then
        echo "$name: equal ($(wc -l <"$work/$name.plain") lines), through vgpu's libcuda.so.1 ($reports report(s))" | tee -a "$log"
    else
        failed=1
        {
            echo "$name: DIFFERENT or failed: plain exit $plain_status, vgpu exit $vgpu_status, $reports report(s)"
            echo "-- plain"; cat "$work/$name.plain" "$work/$name.plain.err"
            echo "-- through vgpu's libcuda.so.1"; cat "$work/$name.vgpu" "$work/$name.vgpu.err"
        } | tee -a "$log"
    fi
    sed 's/^/    /' "$work/$name.vgpu" >>"$log"
}

: >"$log"
nvidia-smi -L >>"$log" 2>&1
both runtime_tour "$lib/build/programs/runtime_tour"
both runtime_tour_shared "$lib/build/programs/runtime_tour_shared"
both driver_tour "$lib/build/programs/driver_tour"
both cublas_gemm "$work/cublas_gemm"
both cufft_transform "$work/cufft_transform"
if python3 -c "import torch" 2>/dev/null; then
    both torch_training python3 "$lib/tests/programs/torch_training.py" 300
else
    echo "torch_training: SKIPPED: no PyTorch here" | tee -a "$log"
fi

bench=$out/libcuda-bench.log
: >"$bench"
for round in 1 2 3 4 5; do
    "$lib/build/programs/latency_bench" >"$work/bench.plain.$round"
    LD_LIBRARY_PATH="$top/$lib/build" "$lib/build/programs/latency_bench" >"$work/bench.vgpu.$round"
done
{
    echo "# plain CUDA against the same binary through vgpu's libcuda.so.1 (pass-through), 5 alternating runs, medians"
    latency_ratios "$work/bench.plain" "$work/bench.vgpu"
} | tee -a "$bench"
{
    echo "# crossing to another process on this node (the costs behind where the library meets Java)"
    "$work/ipc_bench"
} | tee -a "$bench"
tar czf "$out/libcuda-reports.tar.gz" -C "$work" reports
echo "libcuda-programs: $([ $failed -eq 0 ] && echo all equal || echo SOME DIFFERENT)" | tee -a "$log"
exit $failed
