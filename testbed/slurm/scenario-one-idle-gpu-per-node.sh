#!/usr/bin/env bash
# Scenario: fill every node so each has exactly 1 idle GPU (one gpu:3 job per node), submit a
# vgpu:3 job that stays held, and capture what the tracker will parse: `scontrol show node -d`,
# `scontrol show job -d`, `squeue --json`, `sinfo --json`. Captures go to $1 (default
# $TESTBED_DIR/capture). The jobs are cancelled at exit.
set -euo pipefail
source "$(dirname "$0")/common.sh"
capture=${1:-$TESTBED_DIR/capture}
mkdir -p "$capture"

jobs=()
trap 'cancel_jobs "${jobs[@]}"' EXIT
for node in "${TESTBED_NODES[@]}"; do
    jobs+=("$(submit --gres=gpu:$((TESTBED_GPUS_PER_NODE - 1)) -w "$node" -J "fill-$node" --wrap 'sleep 600')")
done
for job in "${jobs[@]}"; do
    expect_state "$job" RUNNING 30
done
held=$(submit --gres=vgpu:3 -J wants-3-vgpus --wrap 'echo ran')
jobs+=("$held")
wait_until 10 "vgpu job $held is held" job_state_is "$held" PENDING || die "vgpu job $held is not pending"

slurm scontrol show node -d >"$capture/scontrol-show-node-d.txt"
slurm scontrol show job -d >"$capture/scontrol-show-job-d.txt"
slurm squeue --json >"$capture/squeue.json"
slurm sinfo --json >"$capture/sinfo.json"

for node in "${TESTBED_NODES[@]}"; do
    used=$(slurm scontrol show node -d "$node" | tr ' ' '\n' | sed -n 's/^GresUsed=//p')
    [[ "$used" == gpu:$((TESTBED_GPUS_PER_NODE - 1))* ]] \
        || die "node $node has GresUsed=$used, expected gpu:$((TESTBED_GPUS_PER_NODE - 1)) (one GPU idle)"
done
pass "one-idle-gpu-per-node: jobs ${jobs[*]:0:${#TESTBED_NODES[@]}} leave 1 idle GPU on each of" \
    "${TESTBED_NODES[*]}; vgpu job $held held; captured to $capture"
