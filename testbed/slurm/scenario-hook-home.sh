#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): the hook moves borrowed vGPUs home by itself. A
# vgpu:3 job starts on 1 local + 2 borrowed GPUs and runs `vgpu run --hold`, whose migration agent polls
# the tracker. The filler on its node ends: the hook claims the freed GPUs with grant holders, the agent
# moves both vGPUs home, the lenders' holders are cancelled, `vgpu report --format json` lists both
# migrations with their blocked times, and the workload's results are checked after the moves. Prints the
# time from the filler's end to the first migration's start.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
fill_leaving_one_idle_gpu
job=$(submit --gres=vgpu:3 -J hook-home --wrap "$(vgpu_job_script --hold 60)")
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
mapfile -t lenders < <(holders_of "$job")
[ "${#lenders[@]}" -eq 2 ] || die "job $job has ${#lenders[@]} holders, expected 2"
say "job $job runs on $node, borrowing through holders ${lenders[*]}"
sleep 5 # the workload's first pass on the remote vGPUs, so the agent has counters to report

started_migrations() { grep -Ec 'migration [0-9]+: vGPU .* submitted' "$TESTBED_DIR/log/tracker.log" || true; }
before=$(started_migrations)
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then slurm scancel "$fill"; freed_at=$(date +%s.%N); fi
done
first_started() { [ "$(started_migrations)" -gt "$before" ]; }
wait_until 30 "the hook starts a migration" first_started || die "no migration: $(tail -n 20 "$TESTBED_DIR/log/tracker.log")"
say "release -> first migration start: $(python3 -c "import sys; print(round($(date +%s.%N) - $freed_at, 2))") s (upper bound: seen by polling the log)"
home() { [ "$(tracker_request status | grep "^assembly job=$job " | grep -o "/home/" | wc -l)" -eq 2 ]; }
wait_until 90 "both vGPUs of job $job are home" home \
    || die "not home: $(tracker_request status | head -n 3); $(grep -E 'migration [0-9]+:' "$TESTBED_DIR/log/tracker.log" | tail -n 8)"
for holder in "${lenders[@]}"; do
    wait_until 30 "lender holder $holder has ended" job_has_ended "$holder" || die "holder $holder still runs"
done
"$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" --format json >"$TESTBED_DIR/out/report-home-$job.json"
python3 - "$TESTBED_DIR/out/report-home-$job.json" "$job" <<'CHECK' || die "report: $(cat "$TESTBED_DIR/out/report-home-$job.json")"
import json, sys
report = json.load(open(sys.argv[1]))
job = int(sys.argv[2])
moves = [m for m in report["migrations"] if m["job"] == job]
assert len(moves) == 2, moves
for m in moves:
    print("testbed: migration", json.dumps(m))
CHECK
expect_state "$job" COMPLETED 120
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" "$node" 1 2
pass "hook-home: both borrowed vGPUs of job $job moved home to $node while it ran; lenders' holders ended"
