#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): a migration that fails at its target leaves the job
# running remote. A vgpu:3 job runs `vgpu run --hold` with the test-only VGPU_TEST_MIGRATION_FAULT set, so
# every move its agent makes fails while replaying onto the target. The filler on its node ends: the hook
# claims a freed GPU with a grant holder and sends the move; the agent reports it failed; the tracker
# cancels the grant holder, keeps the vGPU remote and backs off: one attempt per borrowed vGPU, none
# repeated while the job runs on. The lenders' holders stay, no grant holder is left, `vgpu report` lists
# the failed moves, and the workload's results are checked after them on 1 local + 2 remote vGPUs.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
BORROWER=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${BORROWER:+"$BORROWER"}; stop_tracker' EXIT
start_tracker
start_borrowing_job 50 hook-fault --export=ALL,VGPU_TEST_MIGRATION_FAULT=replay-allocation
job=$BORROWER node=$BORROWER_NODE lenders=("${LENDER_HOLDERS[@]}")
say "job $job runs on $node, borrowing through holders ${lenders[*]}, every migration set to fail at its target"
sleep 5 # the workload's first pass on the remote vGPUs, so the agent has counters to report

log=$TESTBED_DIR/log/tracker.log
started() { grep -Ec "migration [0-9]+: vGPU [0-9]+ of job $job from .* submitted" "$log" || true; }
failed() { grep -Ec "migration [0-9]+: vGPU [0-9]+ of job $job stays remote: the agent could not move it" "$log" || true; }
[ "$(started)" -eq 0 ] || die "a migration started before the filler ended"
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then slurm scancel "$fill"; fi
done
both_failed() { [ "$(failed)" -ge 2 ]; }
wait_until 40 "both borrowed vGPUs' moves have failed" both_failed \
    || die "not both failed: $(grep -E "migration [0-9]+:" "$log" | tail -n 8)"
grep -E "migration [0-9]+: vGPU [0-9]+ of job $job stays remote" "$log" | sed 's/^/testbed:   /' | cut -c1-260
no_grant() { [ -z "$(slurm squeue -h -p vgpu-lend -t PENDING,RUNNING,CONFIGURING -o '%j' | grep "^vgpu-grant-$job-v")" ]; }
wait_until 30 "job $job's grant holders are gone" no_grant || die "grant holder left: $(slurm squeue -p vgpu-lend)"
# The back-off: the freed GPUs stay free beside the job, yet the hook tries no vGPU again.
sleep 10
[ "$(started)" -eq 2 ] || die "the hook started $(started) migrations of job $job, expected one per vGPU: $(grep -E "migration [0-9]+:" "$log" | tail -n 8)"
for vgpu in 1 2; do
    [ "$(grep -Ec "migration [0-9]+: vGPU $vgpu of job $job from .* submitted" "$log")" -eq 1 ] \
        || die "vGPU $vgpu of job $job was tried more than once"
done
job_state_is "$job" RUNNING || die "job $job is $(job_field "$job" JobState) after the failed moves"
[ "$(holders_of "$job" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${lenders[@]}" | sort | tr '\n' ' ')" ] \
    || die "the lenders' holders changed: $(holders_of "$job" | tr '\n' ' '), were ${lenders[*]}"
tracker_request status | grep "^assembly job=$job " | grep -q "/home/" && die "the tracker says a vGPU is home"
"$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" --format json >"$TESTBED_DIR/out/report-fault-$job.json"
python3 - "$TESTBED_DIR/out/report-fault-$job.json" "$job" <<'CHECK' || die "report: $(cat "$TESTBED_DIR/out/report-fault-$job.json")"
import json, sys
report = json.load(open(sys.argv[1]))
job = int(sys.argv[2])
moves = [m for m in report["migrations"] if m["job"] == job]
assert sorted(m["vgpu"] for m in moves) == [1, 2], moves
assert all(m["outcome"] == "failed" for m in moves), moves
for m in moves:
    print("testbed: migration", json.dumps(m))
CHECK
expect_state "$job" COMPLETED 120
output=$TESTBED_DIR/out/$job.out
grep -q "TEST-ONLY FAULT: every migration of this job fails at replay-allocation" "$output" \
    || die "vgpu run did not say loudly that a test-only fault is set: $(head -n 5 "$output")"
[ "$(grep -c '^migration: .*test-only fault injected at replay-allocation' "$output")" -eq 2 ] \
    || die "the job did not report both failed moves: $(grep '^migration' "$output")"
grep -E '^migration: ' "$output" | sed 's/^/testbed:   job: /' | cut -c1-240
check_vgpu_job_output "$output" "$node" 1 2
grep -Eq "^PASS: 3 of 3 vGPUs \(1 local, 2 remote\).*" <(grep '^PASS: ' "$output" | tail -n 1) \
    || die "after the hold the vGPUs are not still 1 local + 2 remote: $(grep '^PASS: \|^FAIL: ' "$output")"
grep -q '^FAIL' "$output" && die "a check failed: $(grep '^FAIL' "$output")"
pass "hook-fault: both moves of job $job failed at the target (test-only fault); the vGPUs stayed remote with" \
    "results intact, the grant holders were cancelled, the lenders' holders kept, and the hook tried each vGPU once"
