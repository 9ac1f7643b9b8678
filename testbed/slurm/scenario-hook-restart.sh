#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): a tracker SIGKILLed mid-migration and restarted
# leaves Slurm, ledger and job agreeing. A vgpu:3 job holds its vGPUs under `vgpu run --hold`; its node's
# filler ends; `vgpu migrate JOB 1 --no-wait` starts a move home and the tracker is killed at once. After
# the restart, vGPU 1 is either home (its grant holder runs, the lender's holder is gone) or remote (its
# lender's holder runs, no grant holder): never both gone, never both kept once settled; the job's results
# are checked after.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
BORROWER=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${BORROWER:+"$BORROWER"}; stop_tracker' EXIT
start_tracker
config=$TESTBED_DIR/etc/vgpu.conf
"$VGPU" hook pause --config "$config"
# The job holds its vGPUs longer than the wait for settling below, so a slow settling is reported as such rather
# than as a disagreement left by the job's own end.
start_borrowing_job 90 hook-restart
job=$BORROWER node=$BORROWER_NODE
sleep 3
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then slurm scancel "$fill"; fi
done
sleep 2
"$VGPU" migrate --config "$config" --no-wait "$job" 1
sleep "${VGPU_KILL_AFTER:-0.5}"
stop_tracker KILL
say "tracker killed; ledger: $(grep -E '^(migration|outcome)' "$TESTBED_DIR/state/tracker.ledger" | cut -c1-100 | tr '\n' '|')"
start_tracker
running() { slurm squeue -h -p vgpu-lend -t RUNNING,PENDING,CONFIGURING -o '%j' | grep -c "^vgpu-$1-$job-v1\$" || true; }
settled() {
    local lend
    lend=$(tracker_request status | grep "^assembly job=$job " | grep -o ' lend=1/[^ ]*')
    if grep -q '/home/' <<<"$lend"; then
        [ "$(running grant)" -eq 1 ] && [ "$(running holder)" -eq 0 ]
    else
        [ "$(running grant)" -eq 0 ] && [ "$(running holder)" -eq 1 ]
    fi
}
wait_until 60 "Slurm and the ledger agree on vGPU 1 of job $job" settled \
    || die "disagree: $(tracker_request status | grep "^assembly job=$job "); $(slurm squeue -p vgpu-lend)"
say "settled: $(tracker_request status | grep "^assembly job=$job " | grep -o ' lend=1/[^ ]*')"
expect_state "$job" COMPLETED 120
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" "$node" 1 2
pass "hook-restart: a tracker killed mid-migration of job $job came back agreeing with Slurm and the job"
