#!/usr/bin/env bash
# README's first command: the whole story of vgpu on a real Slurm cluster on this one machine, as root.
# Installs Debian's Slurm where it is missing, builds the SPANK bridge, brings up the testbed (3 nodes
# with 4 emulated GPUs each, testbed/slurm/up.sh), starts the tracker, fills the nodes, submits
# `sbatch --gres=vgpu:3` with a checked workload, shows it start on 1 local + 2 borrowed GPUs, ends the
# fillers on its node, shows the tracker's hook moving both vGPUs home while the workload runs, prints
# `vgpu report`, a /metrics excerpt and the release-to-migration latency, checks the workload's results,
# and tears the cluster down, also on failure (its logs and the jobs' output kept in $VGPU_TESTBED_DIR.failed)
# or Ctrl-C. The steps and their checks are scenario hook-home's (testbed/slurm/common.sh). Exit 0 only
# when every check passed.
# Environment: VGPU_TESTBED_DIR (default /tmp/vgpu-story), VGPU_TESTBED_PORT_BASE (17900),
# VGPU_STORY_HOLD (how long the workload keeps its vGPUs open for the moves, default 30 s).
set -euo pipefail
export VGPU_TESTBED_DIR=${VGPU_TESTBED_DIR:-/tmp/vgpu-story}
slurm_dir=$(cd "$(dirname "$0")/slurm" && pwd)
source "$slurm_dir/common.sh"
hold=${VGPU_STORY_HOLD:-30}

story_begin story.sh

echo "vgpu on a real Slurm cluster: a job starts on borrowed GPUs, and they come home when its node frees GPUs."
echo "The GPUs are EMULATED: fake device files for Slurm, the GPU work on the CPU (not a GPU; proves nothing about GPUs)."

story_slurm_and_bridge

story_cluster
story_tracker

section "Fill the nodes, then sbatch --gres=vgpu:3"
echo "  every node runs a filler job that leaves 1 GPU idle; no node has 3 idle GPUs"
submitted=$SECONDS
start_borrowing_job "$hold"
echo "  job $BORROWER (vgpu run --hold $hold: checks its workloads on every vGPU, holds them, checks again)" \
    "started after $((SECONDS - submitted)) s on $BORROWER_NODE"
slurm squeue -o '%.5i %.10P %.22j %.8T %.6N %b' | indent
report=$("$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf")
echo "  vgpu report: 1 local GPU + 2 borrowed, each through a holder job on its lender's node:"
report_section 'Borrowed GPUs now' <<<"$report" | indent

section "GPUs free up on $BORROWER_NODE"
echo "  the filler on $BORROWER_NODE ends; the tracker's hook moves the borrowed vGPUs home while the job runs:"
story_moves_home

story_report_and_metrics

section "The workload's results (job $BORROWER, after its hold)"
finish_borrower
# Abridged: where each vGPU was and went, the migration agent's lines, the summaries (the whole output is
# in out/JOB.out while the story runs).
grep -E '^vgpu job|^vgpu [0-9]+: |^(PASS|FAIL):|held-data|TrackerLink' "$TESTBED_DIR/out/$BORROWER.out" \
    | sed -E 's/^\[[^]]*\] INFO [a-z.]*\.([A-Za-z]+) - /\1: /' | indent
echo "  checked: every workload passed on all 3 vGPUs before the moves and after them, the held data came through"
