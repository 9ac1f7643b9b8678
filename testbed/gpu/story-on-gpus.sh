#!/usr/bin/env bash
# The story on a real Slurm cluster whose GPUs are real: run ON a machine of two GPUs, as root, from the
# repository root, after testbed/gpu/prepare.sh and testbed/gpu/slurm-bundle.sh staged .gpu/ here and
# testbed/gpu/slurm-unpack.sh put Slurm in place there, with VGPU=testbed/gpu/vgpu (the launcher over .gpu/lib).
# Two nodes of one GPU each (slurmd -N n1 n2 on this machine): n1 owns /dev/nvidia0, n2 owns /dev/nvidia1, and n2
# only lends (the job partition is n1's). A filler holds n1's GPU; `sbatch --gres=vgpu:1` starts at once on n1 with
# n2's GPU borrowed through a holder job whose worker drives it natively, and runs the Lennard-Jones MD (vgpu run
# --workload lennard-jones, VGPU_STORY_MD_STEPS steps, default 1000, each checked against the CPU reference). The
# filler ends; the tracker's hook moves the vGPU onto n1's GPU natively while the MD runs; the story prints the
# moves, `vgpu report`, a /metrics excerpt and the MD's results (the step the move fell in is marked), checks them,
# and tears the cluster down (logs kept in $VGPU_TESTBED_DIR.failed on a failure). Exit 0 only when every check
# passed.
# VGPU_TESTBED_GPUS=emulated tells the same story on the CPU emulation (fake device files), as a rehearsal on a
# machine without GPUs; VGPU_TESTBED_DIR (default /tmp/vgpu-story-gpus), VGPU_TESTBED_PORT_BASE as for the testbed.
set -euo pipefail
export VGPU_TESTBED_NODES="n1 n2" VGPU_TESTBED_GPUS_PER_NODE=1 VGPU_TESTBED_GPUS=${VGPU_TESTBED_GPUS:-native}
export VGPU_TESTBED_DIR=${VGPU_TESTBED_DIR:-/tmp/vgpu-story-gpus}
source "$(dirname "$0")/../slurm/common.sh"
steps=${VGPU_STORY_MD_STEPS:-1000}

story_begin story-on-gpus.sh
echo "vgpu on a real Slurm cluster of two nodes with a GPU each: a job starts on the other node's GPU, borrowed,"
echo "and comes home when its own node's GPU is released, while its MD runs."
if [ "$TESTBED_GPUS" = emulated ]; then
    echo "The GPUs are EMULATED: fake device files for Slurm, the GPU work on the CPU (a rehearsal; proves nothing about GPUs)."
else
    nvidia-smi -L | indent
fi

story_slurm_and_bridge
story_cluster
story_tracker

section "n1's GPU is busy; sbatch --gres=vgpu:1 for n1"
# n2 only lends: were it in the job partition, the job would simply run on its idle GPU.
slurm scontrol update PartitionName=gpu Nodes=n1
FILL_JOBS=("$(submit --gres=gpu:1 -w n1 -J fill-n1 --wrap 'sleep 600')")
expect_state "${FILL_JOBS[0]}" RUNNING 30
submitted=$SECONDS
BORROWER=$(submit --gres=vgpu:1 -J md-borrowed \
    --wrap "$(vgpu_job_script --workload lennard-jones --size 4 --steps "$steps")")
expect_state "$BORROWER" RUNNING 60
BORROWER_NODE=$(job_field "$BORROWER" NodeList)
[ "$BORROWER_NODE" = n1 ] || die "job $BORROWER runs on $BORROWER_NODE, not n1"
mapfile -t LENDER_HOLDERS < <(holders_of "$BORROWER")
[ "${#LENDER_HOLDERS[@]}" -eq 1 ] || die "job $BORROWER has ${#LENDER_HOLDERS[@]} holders, expected 1"
echo "  filler ${FILL_JOBS[0]} holds n1's GPU; job $BORROWER (vgpu run: $steps checked MD steps) started after" \
    "$((SECONDS - submitted)) s on n1, its vGPU borrowed from n2 through holder ${LENDER_HOLDERS[0]}"
slurm squeue -o '%.5i %.10P %.16j %.8T %.6N %b' | indent
"$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" | report_section 'Borrowed GPUs now' | indent

section "n1's GPU is released"
echo "  the filler ends; the tracker's hook moves the vGPU home while the MD runs:"
story_moves_home

story_report_and_metrics

section "The MD's results (job $BORROWER)"
expect_state "$BORROWER" COMPLETED $((120 + steps / 2))
output=$TESTBED_DIR/out/$BORROWER.out
grep -qx 'VGPU_ASSEMBLY=0=remote:.*' "$output" || die "the job did not start on a borrowed vGPU: $(head -n 5 "$output")"
grep -E '^vgpu job|^vgpu 0: |^migration: ' "$output" | indent
checked=$(grep -c '^PASS  vgpu 0  step [0-9]*  lennard-jones' "$output" || true)
failed=$(grep -c '^FAIL' "$output" || true)
[ "$checked" -eq "$steps" ] && [ "$failed" -eq 0 ] \
    || die "$checked of $steps MD steps passed, $failed lines FAIL: $(grep -m 5 '^FAIL' "$output")"
during=$(grep -m 1 'moved during the check' "$output" || true)
if [ -n "$during" ]; then
    step=$(sed -E 's/^PASS  vgpu 0  step ([0-9]+) .*/\1/' <<<"$during")
    echo "  steps 1-$((step - 1)) on the borrowed GPU, step $step during the move, steps $((step + 1))-$steps at home:"
    indent <<<"$during"
else
    echo "  the move fell between two steps (none began on one GPU and ended on the other)"
fi
grep -E '^(PASS|FAIL): ' "$output" | indent
grep -q '^PASS: 1 of 1 vGPUs (1 local, 0 remote)' "$output" \
    || die "the vGPU is not local at the end: $(grep -E '^(PASS|FAIL): ' "$output")"
echo "  checked: all $steps MD steps passed, the first on n2's GPU, the last on n1's"
