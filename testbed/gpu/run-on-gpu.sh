#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# Runs, each with its log in $OUT (default .gpu/out):
#   nvidia-smi.log   the GPU and driver
#   tests.log        every test of rcuda-runtime, migration-agent and job-wrapper, the `gpu`-tagged ones
#                    included (native conformance suites, native smoke test, native-to-native refusal,
#                    vgpu run with a borrowed vGPU moved home onto the native GPU);
#                    `slurm`-tagged tests need a cluster and are left out
#   devices.log      vgpu devices
#   demo.log         vgpu demo --backend native
#   bench.log        vgpu bench (native backend vs raw JCuda)
#   remote-bench.log vgpu remote-bench (worker on the last GPU, client on GPU 0, against plain sockets)
#   migration-bench.log  vgpu migration-bench: vGPUs start in workers on the last GPU, move to GPU 0
#                    (extra arguments from VGPU_MIGRATION_BENCH_ARGS, e.g. --large)
# Every step runs even if an earlier one failed; the exit status is 1 if any failed.
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
step() {
    local name=$1
    shift
    echo "== $name: $*"
    if "$@" >"$out/$name.log" 2>&1; then
        echo "== $name: ok"
    else
        echo "== $name: FAILED (exit $?)"
        failed=1
    fi
    tail -n 60 "$out/$name.log"
}

step nvidia-smi nvidia-smi
# With two or more GPUs the worker (lender) serves the last GPU and this process (borrower) uses GPU 0.
last_gpu=$(( $(nvidia-smi -L | wc -l) - 1 ))
step tests "${java[@]}" -Dvgpu.test.worker.device="$last_gpu" -cp ".gpu/lib/*:$test_classes:$junit_jar" org.junit.platform.console.ConsoleLauncher execute \
    --scan-class-path "$test_classes" --exclude-tag slurm --fail-if-no-tests --details tree --disable-banner
step devices "${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu devices
step demo "${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu demo --backend native
step bench "${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu bench
step remote-bench "${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu remote-bench --backend native --device 0 \
    --worker-device "$last_gpu"
step migration-bench "${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu migration-bench --backend native --source worker \
    --worker-device "$last_gpu" --target-device 0 ${VGPU_MIGRATION_BENCH_ARGS:-}
exit $failed
