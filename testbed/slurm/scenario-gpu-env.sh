#!/usr/bin/env bash
# Scenario: a plain `sbatch --gres=gpu:2` job is not held by job_submit.lua, runs, and gets two
# fake GPUs in CUDA_VISIBLE_DEVICES (Slurm sets it because the GPUs are character devices).
set -euo pipefail
source "$(dirname "$0")/common.sh"

job=$(submit --gres=gpu:2 --wrap 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; echo "SLURM_JOB_GPUS=$SLURM_JOB_GPUS"')
trap 'cancel_jobs "$job"' EXIT
expect_state "$job" COMPLETED 30
visible=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$TESTBED_DIR/out/$job.out")
[[ "$visible" =~ ^[0-9]+,[0-9]+$ ]] \
    || die "job $job saw CUDA_VISIBLE_DEVICES='$visible', expected two GPU indices; its output: $(cat "$TESTBED_DIR/out/$job.out")"
pass "gpu-env: job $job (--gres=gpu:2) ran on $(job_field "$job" NodeList) with CUDA_VISIBLE_DEVICES=$visible"
