#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# Runs, each with its log in $OUT (default .gpu/out):
#   nvidia-smi.log   the GPU and driver
#   tests.log        the `gpu`-tagged tests of rcuda-runtime, migration-agent, job-wrapper and the benchmarks
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

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
out=${OUT:-$top/.gpu/out}
mkdir -p "$out"

if [ -z "${JAVA:-}" ]; then
    tar xJf .gpu/jre.tar.xz -C /tmp || { echo "run-on-gpu: cannot unpack .gpu/jre.tar.xz (run prepare.sh first)" >&2; exit 2; }
    JAVA=/tmp/jre/bin/java
fi
java=("$JAVA" --enable-native-access=ALL-UNNAMED)
test_classes=.gpu/test/classes
junit_jar=$(ls .gpu/test/junit-platform-console-standalone-*.jar)

failed=0
# $SECONDS counts from the script's start, the unpacking of the runtime included
run_seconds=${VGPU_GPU_RUN_SECONDS:-510}
summary=()
# step NAME BUDGET COMMAND...: runs COMMAND with its output in $out/NAME.log, for at most BUDGET seconds.
step() {
    local name=$1 budget=$2
    shift 2
    local left=$(( run_seconds - SECONDS ))
    if (( left < 10 )); then
        echo "== $name: SKIPPED (the run's time is spent)"
        summary+=("$(printf '%-26s skipped' "$name")")
        failed=1
        return
    fi
    (( budget > left )) && budget=$left
    echo "== $name (at most ${budget} s): $*"
    local began=$SECONDS status=0
    # A step that ignores SIGTERM (a JVM stuck in a driver call) is killed 10 s later. Worker processes a bench
    # started end on their own: when its connection to them closes, or idle after their 30 s idle timeout.
    timeout --kill-after=10 "$budget" "$@" >"$out/$name.log" 2>&1 || status=$?
    local took=$(( SECONDS - began )) verdict=ok
    if (( status == 124 || status == 137 )); then
        verdict="TIMED OUT after ${budget} s"
        failed=1
    elif (( status != 0 )); then
        verdict="FAILED (exit $status)"
        failed=1
    fi
    echo "== $name: $verdict, ${took} s"
    summary+=("$(printf '%-26s %4d s  %s' "$name" "$took" "$verdict")")
    tail -n 60 "$out/$name.log"
}

step nvidia-smi 15 nvidia-smi
# With two or more GPUs the worker (lender) serves the last GPU and this process (borrower) uses GPU 0.
last_gpu=$(( $(nvidia-smi -L | wc -l) - 1 ))
vgpu=("${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu)
tags=(--include-tag gpu)
[ "${VGPU_GPU_TESTS:-gpu}" = all ] && tags=(--exclude-tag slurm)
step tests 200 "${java[@]}" -Dvgpu.test.worker.device="$last_gpu" -cp ".gpu/lib/*:$test_classes:$junit_jar" org.junit.platform.console.ConsoleLauncher execute \
    --scan-class-path "$test_classes" "${tags[@]}" --fail-if-no-tests --details tree --disable-banner
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

echo "== seconds per step (the run's budget: $run_seconds s)"
printf '%s\n' "${summary[@]}"
echo "== total: $SECONDS s"
exit $failed
