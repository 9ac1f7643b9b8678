#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): the hook moves borrowed vGPUs home by itself. A
# vgpu:3 job starts on 1 local + 2 borrowed GPUs and runs `vgpu run --hold`, whose migration agent polls
# the tracker. The filler on its node ends: the hook claims the freed GPUs with grant holders, the agent
# moves both vGPUs home, the lenders' holders are cancelled, `vgpu report --format json` lists both
# migrations with their blocked times, and the workload's results are checked after the moves. Prints the
# time from the filler's end to the first migration's start. The steps are in common.sh, which
# testbed/story.sh (README's first command) shares.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
BORROWER=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${BORROWER:+"$BORROWER"}; stop_tracker' EXIT
start_tracker
start_borrowing_job 60
say "job $BORROWER runs on $BORROWER_NODE, borrowing through holders ${LENDER_HOLDERS[*]}"
sleep 5 # the workload's first pass on the remote vGPUs, so the agent has counters to report
free_borrower_node
say "release -> first migration start: $RELEASE_TO_MIGRATION s (upper bound: seen by polling the log)"
wait_borrower_home
check_borrower_migrations "$TESTBED_DIR/out/report-home-$BORROWER.json" | sed 's/^/testbed: migration /'
finish_borrower
pass "hook-home: both borrowed vGPUs of job $BORROWER moved home to $BORROWER_NODE while it ran; lenders' holders ended"
