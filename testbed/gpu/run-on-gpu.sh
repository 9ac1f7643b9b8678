#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# Runs, each with its log in $OUT (default .gpu/out):
#   nvidia-smi.log   the GPU and driver
#   tests.log        the `gpu`-tagged tests of rcuda-runtime, migration-agent, job-wrapper's modules, the integration
#                    tests and the benchmarks
#                    (native conformance suites, native smoke test, native-to-native refusal, vgpu run with a
#                    borrowed vGPU moved home onto the native GPU, twins against PTX); the others run in CI, and
#                    with all of them (VGPU_GPU_TESTS=all, about 4 minutes on an H100) the run would not fit one call
#   devices.log      vgpu devices
#   demo.log         vgpu demo --backend native
#   bench.log        vgpu bench (native backend vs raw JCuda)
#   remote-bench.log vgpu remote-bench (worker on the last GPU, client on GPU 0, against plain sockets)
#   migration-bench-*.log  vgpu migration-bench --backend native --source worker, in four steps so that one
#                    running long does not cost the others: lock, per-call, replay and blocked; small-allocs
#                    (10,000 allocations of 4 KiB: memory against plain cuMemAlloc, blocked time to GPU 0 and to
#                    a worker); mem-sync; md
#                    (vGPUs start in workers on the last GPU, move to GPU 0; extra arguments from
#                    VGPU_MIGRATION_BENCH_ARGS, e.g. --large or --full, which needs more than one call's time)
# Each step has a time budget (seconds, below; `timeout` stops a step at its budget and its log keeps what it
# printed) and the run as a whole, from the script's start, one of VGPU_GPU_RUN_SECONDS (default 510: one
# device call stays under 9 minutes): a step gets the smaller of its budget and the time left,
# and one with less than 10 s left is skipped. Every step runs even if an earlier one failed; the exit status
# is 1 if any failed, timed out or was skipped. The seconds of each step and the total are printed at the end.
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail

script_name=run-on-gpu
run_seconds=${VGPU_GPU_RUN_SECONDS:-510}
source "$(dirname "$0")/steps.sh"

step nvidia-smi 15 nvidia-smi
# With two or more GPUs the worker (lender) serves the last GPU and this process (borrower) uses GPU 0.
last_gpu=$(( $(nvidia-smi -L | wc -l) - 1 ))
tags=(--include-tag gpu)
[ "${VGPU_GPU_TESTS:-gpu}" = all ] && tags=(--exclude-tag slurm)
junit_properties=(-Dvgpu.test.worker.device="$last_gpu")
junit tests 200 --scan-class-path "$test_classes" "${tags[@]}"
step devices 20 "${vgpu[@]}" devices
step demo 40 "${vgpu[@]}" demo --backend native
step bench 45 "${vgpu[@]}" bench
step remote-bench 60 "${vgpu[@]}" remote-bench --backend native --device 0 --worker-device "$last_gpu"
migration_bench=("${vgpu[@]}" migration-bench --backend native --source worker --worker-device "$last_gpu" --target-device 0)
# shellcheck disable=SC2086  # VGPU_MIGRATION_BENCH_ARGS is a list of words
step migration-bench-small 90 "${migration_bench[@]}" --sections lock,per-call,replay,blocked ${VGPU_MIGRATION_BENCH_ARGS:-}
# shellcheck disable=SC2086
step migration-bench-small-allocs 90 "${migration_bench[@]}" --sections small-allocs ${VGPU_MIGRATION_BENCH_ARGS:-}
# shellcheck disable=SC2086
step migration-bench-mem-sync 180 "${migration_bench[@]}" --sections mem-sync ${VGPU_MIGRATION_BENCH_ARGS:-}
# shellcheck disable=SC2086
step migration-bench-md 180 "${migration_bench[@]}" --sections md ${VGPU_MIGRATION_BENCH_ARGS:-}

print_summary
exit $failed
