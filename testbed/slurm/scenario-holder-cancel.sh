#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): an admin's scancel of a holder job. A vgpu:3 job runs on
# 1 local + 2 borrowed GPUs under `vgpu run --hold`; its own node stays full and the hook is paused.
# (a) The filler of the third node ends; `scancel` of vGPU 1's holder: its worker tells the tracker it leaves
#     (SIGTERM, Slurm waits KillWait before SIGKILL), the tracker evacuates vGPU 1 to a new worker on the third
#     node while the old worker still serves it, and the job's results are checked after the move.
# (b) Every GPU taken again; `scancel` of vGPU 2's holder: nothing can take vGPU 2, so the job is told (its
#     comment says vGPU 2 LOST and why), the tracker logs it at ERROR and the report's lost_reason says it;
#     the job's later checks of vGPU 2 fail, loudly.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
MORE_FILL=()
job=
trap '"$VGPU" hook resume --config "$TESTBED_DIR/etc/vgpu.conf" >/dev/null 2>&1 || true; cancel_jobs "${FILL_JOBS[@]}" "${MORE_FILL[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
config=$TESTBED_DIR/etc/vgpu.conf
"$VGPU" hook pause --config "$config"
fill_leaving_one_idle_gpu
job=$(submit --gres=vgpu:3 -J holder-cancel --wrap "$(vgpu_job_script --hold 50)")
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
sleep 5 # the agent's first report
lend_node() { tracker_request status | grep "^assembly job=$job " | grep -o " lend=$1/[^/]*" | cut -d/ -f2; }
holder_of() { slurm squeue -h -t RUNNING -n "vgpu-holder-$job-v$1" -o '%i' | head -n 1; }
lender=$(lend_node 1)
other=$(end_fill_beside "$node" "$lender")
sleep 2 # Slurm frees the filler's GPUs

# (a) evacuated to another lender
holder1=$(holder_of 1)
[ -n "$holder1" ] || die "no running holder of vGPU 1 of job $job"
say "scancel $holder1 (vGPU 1's holder on $lender)"
slurm scancel "$holder1"
moved() { [ "$(lend_node 1)" = "$other" ]; }
wait_until 60 "vGPU 1 of job $job was evacuated to $other" moved \
    || die "not evacuated: $(tracker_request status | head -n 3); $(grep -E 'leaving|migration [0-9]+:' "$TESTBED_DIR/log/tracker.log" | tail -n 6)"
grep -q "worker .* of vGPU 1 is leaving (holder $holder1 is being cancelled)" "$TESTBED_DIR/log/tracker.log" \
    || die "the tracker did not hear the worker leave: $(tail -n 20 "$TESTBED_DIR/log/tracker.log")"
say "$(grep -E "is leaving|migration [0-9]+: vGPU 1 of job $job runs" "$TESTBED_DIR/log/tracker.log" | tail -n 2)"

# (b) nothing can take vGPU 2: every free GPU is taken again
for free_node in "${TESTBED_NODES[@]}"; do
    if [ "$free_node" != "$node" ]; then
        MORE_FILL+=("$(submit --gres=gpu:1 -c 1 -w "$free_node" -J "refill-$free_node" --wrap 'sleep 600' || true)")
    fi
done
# Each refill runs before the holder is cancelled: one submitted while the GPU's former holder was still ending would
# wait on Slurm's next scheduling pass, and the tracker could take that GPU for vGPU 2 first.
for refill in "${MORE_FILL[@]}"; do
    [ -z "$refill" ] || expect_state "$refill" RUNNING 60
done
sleep 3 # the tracker's next look sees them
holder2=$(holder_of 2)
[ -n "$holder2" ] || die "no running holder of vGPU 2 of job $job"
say "scancel $holder2 (vGPU 2's holder), no GPU free anywhere"
slurm scancel "$holder2"
told() { job_comment_mentions "$job" "vGPU 2 LOST: its holder $holder2 is being cancelled and it cannot be evacuated"; }
wait_until 30 "job $job's comment says vGPU 2 is lost" told \
    || die "the job was not told: $(slurm scontrol show job "$job" | grep Comment)"
grep -q "ERROR .*job $job: vGPU 2 is lost: " "$TESTBED_DIR/log/tracker.log" \
    || die "no ERROR line for the lost vGPU: $(grep "job $job" "$TESTBED_DIR/log/tracker.log" | tail -n 5)"
"$VGPU" report --config "$config" --format json | grep -q '"lost_reason" *: *"its holder '"$holder2"' is being cancelled' \
    || die "the report does not say why vGPU 2 is lost: $("$VGPU" report --config "$config")"
say "$(slurm scontrol show job "$job" | grep -o 'Comment=.*')"

job_has_ended_now() { job_has_ended "$job"; }
wait_until 150 "job $job ended" job_has_ended_now || die "job $job did not end"
output=$TESTBED_DIR/out/$job.out
grep -Eq "^PASS +vgpu 1 .*held-data" "$output" || die "vGPU 1's data did not survive its evacuation: $(cat "$output")"
grep -Eq "^FAIL +vgpu 2 " "$output" || die "vGPU 2 died silently: $(cat "$output")"
pass "holder-cancel: scancel of a holder evacuated vGPU 1 of job $job from $lender to $other with its data; with nowhere to go, vGPU 2's loss was told in the job's comment, the tracker's log and the report"
