#!/usr/bin/env bash
# Run ON a machine of two GPUs (device kind nvidia-h200-x2), from the repository root, after testbed/gpu/prepare.sh
# staged .gpu/ here: the hook's story with real GPUs in both roles, and what a second GPU changes for the remote
# runtime and for migration. Node n1 owns GPU 0, node n2 owns GPU 1. Each step's log is in $OUT (default .gpu/out):
#   nvidia-smi.log        the GPUs, the driver and how the two GPUs are linked (nvidia-smi topo -m)
#   hook-story.log        HookOnGpuTest (HookStory, natively): the real tracker over the unit tests' in-memory
#                         Slurm (no Slurm on the GPU machines), a filler holding n1's GPU 0, a vgpu:1 job started on
#                         GPU 1 borrowed from n2 through a worker process, the Lennard-Jones MD checked run by run
#                         while the filler ends and the hook moves the vGPU onto GPU 0 natively, then vgpu report
#   migration-bench-{two-gpus,one-gpu}-N.log   migration-bench --sections blocked --large (1 GiB and 8 GiB of live
#                         state): the source worker on GPU 1 and the app on GPU 0, beside both on GPU 0, interleaved
#   remote-bench-{two-gpus,one-gpu}-N.log      remote-bench: the worker on GPU 1 and the client on GPU 0, beside both
#                         on GPU 0, interleaved
#   two-gpu-tests.log     the gpu-tagged tests whose borrowed GPU is another GPU on this machine (the worker on GPU 1):
#                         NativeJobRunTest, NativeTrackerMigrationTest, NativeGrantsTest
# ROUNDS (default 2) is how many interleaved rounds of the two benchmarks run. The run's time budget is
# VGPU_GPU_RUN_SECONDS (default 420; each step gets the smaller of its own budget and what is left, as in
# run-on-gpu.sh). Exit 1 if any step failed, timed out or was skipped; the seconds of each step are printed at the end.
set -uo pipefail

script_name=two-gpus
run_seconds=${VGPU_GPU_RUN_SECONDS:-420}
source "$(dirname "$0")/steps.sh"

gpus=$(nvidia-smi -L | wc -l)
if (( gpus < 2 )); then
    echo "two-gpus: this machine has $gpus GPU(s); the story and the comparison need two (device kind nvidia-h200-x2)" >&2
    exit 2
fi
step nvidia-smi 20 sh -c 'nvidia-smi && nvidia-smi topo -m'
junit_properties=(-Dvgpu.test.worker.device=1)
junit hook-story 150 --select-class org.vgpu.tracker.HookOnGpuTest
for round in $(seq 1 "${ROUNDS:-2}"); do
    for placement in two-gpus:1 one-gpu:0; do
        name=${placement%:*} worker=${placement#*:}
        step "migration-bench-$name-$round" 90 "${vgpu[@]}" migration-bench --backend native --source worker \
            --worker-device "$worker" --target-device 0 --sections blocked --large
        step "remote-bench-$name-$round" 75 "${vgpu[@]}" remote-bench --backend native --device 0 --worker-device "$worker"
    done
done
junit two-gpu-tests 120 --select-class org.vgpu.job.NativeJobRunTest --select-class org.vgpu.job.NativeTrackerMigrationTest \
    --select-class org.vgpu.job.NativeGrantsTest

print_summary
exit $failed
