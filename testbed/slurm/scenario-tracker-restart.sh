#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): the tracker is killed (SIGKILL) while a vgpu job
# runs on borrowed GPUs, and a stray holder job appears while it is down. Restarted, it rebuilds its
# state from its ledger and Slurm: it reports the running job's assembly with the same holders Slurm
# shows, cancels the stray holder, and when the job ends cancels its holders. The job finishes with
# its results checked on every vGPU.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
job=
stray=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"} ${stray:+"$stray"}; stop_tracker' EXIT
start_tracker
fill_leaving_one_idle_gpu
# --hold keeps the vGPUs open across the restart, then checks the results again.
job=$(submit --gres=vgpu:3 -J restart-3-vgpus --wrap "$(vgpu_job_script --hold 20)")
expect_state "$job" RUNNING 60
# Kill the tracker once the job has its assembly (the bridge asks it as the job starts).
wait_until 30 "job $job has its assembly" grep -q '^VGPU_ASSEMBLY=' "$TESTBED_DIR/out/$job.out" \
    || die "job $job got no assembly: $(cat "$TESTBED_DIR/out/$job.out" 2>&1)"
mapfile -t holders < <(holders_of "$job" | sort)
[ "${#holders[@]}" -eq 2 ] || die "job $job runs with ${#holders[@]} holder job(s), expected 2"
stop_tracker KILL
say "tracker killed while job $job runs with holders ${holders[*]}"
stray=$(submit -p vgpu-lend --gres=gpu:1 -w n1 -J vgpu-holder-999999-v1 --wrap 'sleep 600')
say "stray holder $stray submitted while the tracker is down"
start_tracker
wait_until 15 "the stray holder $stray is cancelled" job_has_ended "$stray" \
    || die "the restarted tracker left the stray holder $stray: $(job_field "$stray" JobState)"
report=$("$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" --format csv)
# The CSV's columns by their header names (idle-gpu-tracker/README.md), not by position.
reported=$(awk -F, -v job="$job" 'NR == 1 { for (i = 1; i <= NF; i++) column[$i] = i; next }
    $1 == "borrowed" && $2 == job { print $column["holder"] }' <<<"$report" | sort | tr '\n' ' ')
[ "$reported" = "${holders[*]} " ] || die "after the restart the tracker reports holders '$reported' for job $job," \
    "Slurm runs '${holders[*]}': $report"
[ "$(holders_of "$job" | sort | tr '\n' ' ')" = "${holders[*]} " ] || die "job $job's holders changed across the restart"
job_state_is "$job" RUNNING || die "job $job is $(job_field "$job" JobState) after the tracker's restart"
say "after the restart the ledger and Slurm agree: job $job, holders ${holders[*]}"
expect_state "$job" COMPLETED 120
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" "$(job_field "$job" NodeList)" 1 2
wait_until 30 "job $job's holders are gone" no_holders_of "$job" || die "holders of job $job outlived it"
wait_until 10 "the tracker has forgotten job $job" tracker_forgot "$job" || die "the tracker still reports job $job"
pass "tracker-restart: tracker killed and restarted while job $job ran; ledger and Slurm agreed on holders" \
    "${holders[*]}, stray holder $stray cancelled, the job completed with its results checked and left no holder"
