#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): with borrowing off, a vgpu:3 job on a cluster
# whose nodes each have one idle GPU waits (its comment says why) until a node has 3 idle GPUs of its
# own: here until the job filling n1 ends after FILL_SECONDS. Prints the start delay.
# $1: where to write the delay (seconds), optional.
set -euo pipefail
source "$(dirname "$0")/common.sh"
delay_file=${1:-}
fill_seconds=${FILL_SECONDS:-20}

config=$TESTBED_DIR/etc/vgpu-no-borrowing.conf
sed 's/^max_borrowed_per_job = .*/&\nborrowing = off/' "$TESTBED_DIR/etc/vgpu.conf" >"$config"
grep -q '^borrowing = off' "$config" || die "could not write $config"
FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker "$config"
for node in "${TESTBED_NODES[@]}"; do
    # n1's filler ends on its own; the others stay.
    duration=600
    [ "$node" != n1 ] || duration=$fill_seconds
    FILL_JOBS+=("$(submit --gres=gpu:$((TESTBED_GPUS_PER_NODE - 1)) -w "$node" -J "fill-$node" --wrap "sleep $duration")")
done
for filler in "${FILL_JOBS[@]}"; do
    expect_state "$filler" RUNNING 30
done
submitted=$SECONDS
job=$(submit --gres=vgpu:3 -J local-only-3-vgpus --wrap "$(vgpu_job_script)")
wait_until 15 "job $job's comment says why it waits" job_comment_mentions "$job" "borrowing is off" \
    || die "job $job's comment does not say why it waits: '$(job_field "$job" Comment)'"
say "job $job waits: $(slurm scontrol show job "$job" | sed -n 's/^ *Comment=//p')"
expect_state "$job" RUNNING $((fill_seconds + 60))
delay=$((SECONDS - submitted))
say "job $job started ${delay}s after submission"
[ -z "$delay_file" ] || echo "$delay" >"$delay_file"
[ -z "$(holders_of "$job")" ] || die "job $job has holder jobs although borrowing is off"
expect_state "$job" COMPLETED 120
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" n1 3 0
pass "tracker-no-borrowing: vgpu:3 job $job waited for n1's 3 GPUs and started after ${delay}s, all 3 local, results checked"
