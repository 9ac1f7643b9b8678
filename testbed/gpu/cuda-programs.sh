#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here: builds vgpu's
# libcuda.so.1 and the CUDA test programs there (the wire header from the staged vgpu-remote-client jar), then runs
# the driver-API programs and the CUDA runtime ones (runtime_tour, built by plain nvcc and with -cudart shared;
# launch_tour: cudaLaunchKernelEx with launch attributes, kernel attributes, the occupancy API; pitched_tour: pitched
# allocations, 2-D copies and memsets, cudaMemcpyDefault; graph_tour: CUDA graphs made by stream capture) twice on GPU 0,
# plainly and through `vgpu run` (their vGPU served by the launcher's local worker on the native backend), and
# compares what they print; then driver_steps, runtime_tour (static and shared), pitched_tour, graph_tour and a PyTorch
# training script and a PyTorch CUDA graph (torch_graph.py)
# (rcuda-runtime/vgpu-libcuda/tests/programs/torch_training.py: an MLP and a CNN with cuDNN) and a cuBLAS program
# on a native vGPU, on a remote
# one (a worker of the same GPU in another process) and starting remote, moved onto GPU 0 while they run
# (org.vgpu.job.JCudaProgramsOnGpu, which checks the JCuda programs the same way); then latency_bench (an empty
# kernel's launch, launch + synchronize, a 4 KiB copy, 256 MiB pinned copies) plainly and through `vgpu run`,
# alternately, three runs each, with the medians and the ratios vgpu/plain, then on a remote vGPU, on one moved home from a remote worker, and beside the
# Java remote path's figures (vgpu remote-bench); last, cuBLAS and cuFFT programs
# on a native vGPU: how far each gets. Logs in $OUT (default .gpu/out): cuda-programs.log, cuda-bench.log.
set -uo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$top"
out=${OUT:-$top/.gpu/out}
mkdir -p "$out"
log=$out/cuda-programs.log
: >"$log"
script_name=cuda-programs
source "$top/testbed/gpu/libcuda-build.sh"
vgpu_run() {
    env "${job_environment[@]}" timeout 300 "$JAVA" --enable-native-access=ALL-UNNAMED -cp '.gpu/lib/*' \
        org.vgpu.cli.Vgpu run --local-backend native -- "$@"
}

# the GPU check's class path (org.vgpu.job.JCudaProgramsOnGpu, run twice below)
check_classpath=".gpu/lib/*:.gpu/test/classes:$(ls .gpu/test/junit-platform-console-standalone-*.jar)"
failed=0
for program in "driver_tour" "driver_steps 40 0" "driver_steps 2 0 fault" "driver_fork" "runtime_tour" "runtime_tour_shared" "launch_tour" "pitched_tour" "graph_tour"; do
    name=${program// /_}
    plain_status=0 vgpu_status=0
    # shellcheck disable=SC2086 # the program's arguments
    timeout 300 "$lib/build/programs/"$program >"$work/$name.plain" 2>&1 || plain_status=$?
    # shellcheck disable=SC2086
    vgpu_run "$top/$lib/build/programs/"$program >"$work/$name.vgpu" 2>"$work/$name.vgpu.err" || vgpu_status=$?
    if [ "$plain_status" -eq 0 ] && [ "$vgpu_status" -eq 0 ] && cmp -s "$work/$name.plain" "$work/$name.vgpu"; then
        echo "$name: equal to plain CUDA through vgpu run (native vGPU served by the launcher)" | tee -a "$log"
        sed 's/^/    /' "$work/$name.vgpu" >>"$log"
    else
        failed=1
        { echo "$name: DIFFERENT or failed: plain exit $plain_status, vgpu run exit $vgpu_status"
          echo "-- plain"; cat "$work/$name.plain"; echo "-- vgpu run"; cat "$work/$name.vgpu" "$work/$name.vgpu.err"; } | tee -a "$log"
    fi
done
# the library programs, built against the toolkit's cuBLAS and cuFFT beside the other programs
arch=(-gencode arch=compute_80,code=compute_80 -gencode arch=compute_90,code=sm_90)
nvcc "${arch[@]}" -o "$lib/build/programs/cublas_gemm" "$lib/tests/programs/cublas_gemm.cu" -lcublas &&
    nvcc "${arch[@]}" -o "$lib/build/programs/cufft_transform" "$lib/tests/programs/cufft_transform.cu" -lcufft ||
    exit 2
# vgpu run gives a program cuBLAS's workspace setting (CUBLAS_WORKSPACE_CONFIG) where it has none, and cuBLAS's
# kernels then may differ from its default's: plain runs compared with vgpu's are given the same setting
cublas_workspace=CUBLAS_WORKSPACE_CONFIG=:4096:8

# native, remote (a worker of GPU 0 in another process) and remote->native mid-run, by the JCuda programs' check
# (cuBLAS's program among them); the PyTorch training script too (its losses compared with plain PyTorch's, its
# times per step printed)
env "$cublas_workspace" "$JAVA" --enable-native-access=ALL-UNNAMED -Dvgpu.cuda.programs="$top/$lib/build/programs" \
    -Dvgpu.torch.training="$top/$lib/tests/programs/torch_training.py" -Dvgpu.torch.graph="$top/$lib/tests/programs/torch_graph.py" \
    -cp "$check_classpath" \
    org.vgpu.job.JCudaProgramsOnGpu - 20 0 2>&1 | tee -a "$log" | grep -q "^PASS" || failed=1

# what a call costs on a vGPU served by the launcher's local worker (native backend), against plain CUDA
source "$top/testbed/gpu/latency-ratios.sh"
bench=$out/cuda-bench.log
for round in 1 2 3; do
    "$lib/build/programs/latency_bench" >"$work/bench.plain.$round" || failed=1
    vgpu_run "$top/$lib/build/programs/latency_bench" >"$work/bench.vgpu.$round" 2>>"$work/bench.vgpu.err" || failed=1
done
{
    echo "# latency_bench plainly and through vgpu run (a native vGPU on GPU 0), 3 alternating runs, medians"
    latency_ratios "$work/bench.plain" "$work/bench.vgpu"
    # its 256 MiB copies are from and to cudaMallocHost's memory (cuMemHostAlloc), which the launcher shares with the
    # program when it offers to (VGPU_HOST_REGIONS): then no byte crosses the socket, and the goal is a ratio >= 0.95
    echo "# pinned copies (cudaMallocHost, shared with the launcher): vgpu/plain bandwidth, goal >= 0.95"
    latency_ratios "$work/bench.plain" "$work/bench.vgpu" | awk '/_256m_gbps/ {print "pinned_copy_ratio", $1, $7}'
    grep -h "page-locked memory shared with the launcher" "$work/bench.vgpu.err" | head -n 1
} | tee "$bench"
# the same benchmark on a remote vGPU (a worker of GPU 0 in another process, reached through the launcher), three
# runs, and three on a vGPU moved home from such a worker before the benchmark measures, each after a plain run of its
# own that it is set against; then the Java remote path's figures in the same run (vgpu remote-bench)
"$JAVA" --enable-native-access=ALL-UNNAMED -Dvgpu.cuda.bench="$top/$lib/build/programs/latency_bench" \
    -Dvgpu.cuda.bench.out="$work" -cp "$check_classpath" \
    org.vgpu.job.JCudaProgramsOnGpu - 20 0 >>"$log" 2>&1 || failed=1
{
    echo "# latency_bench plainly and through vgpu run on a remote vGPU (a worker of GPU 0 in another process), 3 alternating runs, medians"
    latency_ratios "$work/bench.remote-plain" "$work/bench.remote"
    echo "# latency_bench plainly and through vgpu run on a vGPU moved home from a remote worker before it measured, 3 alternating runs, medians"
    latency_ratios "$work/bench.moved-plain" "$work/bench.moved"
    echo "# the Java remote path in the same run: vgpu remote-bench --backend native --copy-mib 256"
    "$JAVA" --enable-native-access=ALL-UNNAMED -cp '.gpu/lib/*' org.vgpu.cli.Vgpu remote-bench --backend native \
        --copy-mib 256 2>&1
} | tee -a "$bench"
echo "cuda-programs: $([ $failed -eq 0 ] && echo all equal || echo SOME DIFFERENT)" | tee -a "$log"

# Libraries on a native vGPU, with nothing set by the caller (cuBLAS, cuFFT): not all served yet, so these lines
# report how far each gets, not a verdict: equal to plain CUDA, or the lines vgpu's library said
# (VGPU_LIBCUDA_VERBOSE=1 names each refused call or table slot and each served call that failed) before the program
# gave up.
for name in cublas_gemm cufft_transform; do
    env "$cublas_workspace" timeout 300 "$lib/build/programs/$name" >"$work/$name.plain" 2>&1
    VGPU_LIBCUDA_VERBOSE=1 vgpu_run "$top/$lib/build/programs/$name" >"$work/$name.vgpu" 2>"$work/$name.vgpu.err"
    if cmp -s "$work/$name.plain" "$work/$name.vgpu"; then
        echo "library $name: equal to plain CUDA on a native vGPU" | tee -a "$log"
    else
        echo "library $name: not served to its end on a native vGPU yet; vgpu's library said:" | tee -a "$log"
        grep '^vgpu libcuda' "$work/$name.vgpu.err" | sort | uniq -c | sed 's/^/    /' | tee -a "$log"
    fi
done
exit $failed
