#!/usr/bin/env bash
# Scenario: the tracker's grant holders on real Slurm. A vgpu:3 job runs on 1 local + 2 borrowed GPUs;
# its node's filler ends, so 3 GPUs of its node are free. `vgpu migrate JOB VGPU` (an admin's move home)
# makes the tracker claim one with a grant holder vgpu-grant-JOB-vK on the job's node; the tracker
# learns the grant's GPU index and queues the command for the job's agent (state sent). Without an
# agent (no SPANK bridge needed here) nothing more happens: the lender's holder stays. When the job ends
# its holders and its grant holder are cancelled. Unknown job, vGPU and a local vGPU are refused with
# the tracker's reason and exit 1.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
fill_leaving_one_idle_gpu
job=$(submit --gres=vgpu:3 -J hook-grant --wrap 'sleep 300')
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
config=$TESTBED_DIR/etc/vgpu.conf

for bad in "99999 1" "$job 0" "$job 7"; do
    if out=$("$VGPU" migrate --config "$config" $bad 2>&1); then
        die "vgpu migrate $bad succeeded: $out"
    fi
    say "vgpu migrate $bad: $out"
done

filler=
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then filler=$fill; fi
done
slurm scancel "$filler"
wait_until 30 "filler $filler has ended" job_has_ended "$filler" || die "filler $filler did not end"
started=$("$VGPU" migrate --config "$config" --no-wait "$job" 1) || die "vgpu migrate $job 1: $started"
say "$started"
id=$(sed -n 's/^migration \([0-9]*\) started.*/\1/p' <<<"$started")
[ -n "$id" ] || die "no migration id in: $started"
sent() { tracker_request "migration $id" | grep -q ' state=sent '; }
wait_until 30 "migration $id is sent" sent || die "migration $id: $(tracker_request "migration $id")"
say "$(tracker_request "migration $id")"
grant=$(slurm squeue -h -p vgpu-lend -t RUNNING -o '%i %j %N' | awk -v name="vgpu-grant-$job-v1" '$2 == name { print $1 }')
[ -n "$grant" ] || die "no running grant holder vgpu-grant-$job-v1: $(slurm squeue -p vgpu-lend)"
grant_gpu=$(slurm scontrol show job -d "$grant" | sed -n 's/.*GRES=gpu:1(IDX:\([0-9]*\)).*/\1/p')
tracker_request "migration $id" | grep -q " to=$node:$grant_gpu " \
    || die "the tracker's target is not the grant's GPU $node:$grant_gpu: $(tracker_request "migration $id")"
[ "$(holders_of "$job" | wc -l)" -eq 2 ] || die "the lenders' holders must stay until the agent reports"

slurm scancel "$job"
gone() { [ -z "$(slurm squeue -h -p vgpu-lend -t PENDING,RUNNING,CONFIGURING -o '%j' | grep -E "^vgpu-(holder|grant)-$job-v")" ]; }
wait_until 30 "job $job's holders and grant holder are gone" gone \
    || die "left behind: $(slurm squeue -p vgpu-lend)"
pass "hook-grant: job $job on $node, migration $id claimed GPU $grant_gpu of $node with grant holder $grant" \
    "(state sent); the job's end cancelled holders and grant"
