#!/usr/bin/env bash
# Scenario: fill every node so each has exactly 1 idle GPU (one gpu:3 job per node), submit a
# vgpu:3 job that stays held, and capture what the tracker will parse (`scontrol show node -d`,
# `scontrol show job -d`, `squeue --json`, `sinfo --json`) into $1 (default
# $TESTBED_DIR/capture/one-idle). The jobs are cancelled at exit.
set -euo pipefail
source "$(dirname "$0")/common.sh"
capture=${1:-$TESTBED_DIR/capture/one-idle}

FILL_JOBS=()
held=""
trap 'cancel_jobs "${FILL_JOBS[@]}" $held' EXIT
fill_leaving_one_idle_gpu
held=$(submit --gres=vgpu:3 -J wants-3-vgpus --wrap 'echo ran')
sleep 2 # a scheduling cycle: a vgpu job that is not held would start now on some node's idle GPU
[ "$(job_field "$held" JobState)" = PENDING ] || die "vgpu job $held is $(job_field "$held" JobState), expected PENDING"
for node in "${TESTBED_NODES[@]}"; do
    expect_gres_used "$node" "gpu:$((TESTBED_GPUS_PER_NODE - 1)),"
done
capture_slurm_views "$capture"
pass "one-idle-gpu-per-node: jobs ${FILL_JOBS[*]} leave 1 idle GPU on each of ${TESTBED_NODES[*]};" \
    "vgpu job $held held; captured to $capture"
