#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): `vgpu drain` of a lender moves its vGPU away, lender
# to lender. A vgpu:3 job runs on 1 local + 2 borrowed GPUs under `vgpu run --hold`; its own node stays
# full and the hook is paused, so nothing goes home. The filler of the third node ends; `vgpu drain` of the
# first lender moves that vGPU to a new worker on the third node (the agent gets a fresh session token),
# the drained node's holder ends, and the workload's results are checked after the move.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
BORROWER=
trap '"$VGPU" hook resume --config "$TESTBED_DIR/etc/vgpu.conf" >/dev/null 2>&1 || true; cancel_jobs "${FILL_JOBS[@]}" ${BORROWER:+"$BORROWER"}; stop_tracker' EXIT
start_tracker
config=$TESTBED_DIR/etc/vgpu.conf
"$VGPU" hook pause --config "$config"
start_borrowing_job 45 hook-drain
job=$BORROWER node=$BORROWER_NODE
sleep 5 # the agent's first report
lender=$(tracker_request status | grep "^assembly job=$job " | grep -o ' lend=1/[^/]*' | cut -d/ -f2)
other=$(end_fill_beside "$node" "$lender")
sleep 2 # Slurm frees the filler's GPUs
drained=$("$VGPU" drain --config "$config" "$lender") || die "vgpu drain $lender: $drained"
say "vgpu drain $lender: $drained"
moved() { tracker_request status | grep "^assembly job=$job " | grep -q " lend=1/$other/"; }
wait_until 60 "vGPU 1 of job $job runs on $other" moved \
    || die "not moved: $(tracker_request status | head -n 3); $(grep -E 'migration [0-9]+:' "$TESTBED_DIR/log/tracker.log" | tail -n 6)"
say "$(tracker_request status | grep "^assembly job=$job ")"
lender_holder() { slurm squeue -h -p vgpu-lend -t RUNNING -o '%j %N' | grep -q "^vgpu-holder-$job-v1 $lender\$"; }
lender_released() { ! lender_holder; }
wait_until 30 "the holder on $lender has ended" lender_released || die "job $job still holds a GPU of $lender"
expect_state "$job" COMPLETED 120
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" "$node" 1 2
pass "hook-drain: vGPU 1 of job $job moved from $lender to $other by vgpu drain while it ran; results checked after"
