#!/usr/bin/env bash
# Scenario: `sbatch --gres=vgpu:3` is held by job_submit.lua (PENDING, priority 0, a comment saying
# what it waits for even with no tracker running), its owner may
# not release it (only root, i.e. the tracker, may), and root's `scontrol release` lets it run.
set -euo pipefail
source "$(dirname "$0")/common.sh"

job=$(submit --gres=vgpu:3 --wrap 'echo ran')
user_job=""
trap 'cancel_jobs "$job" $user_job' EXIT
sleep 2 # longer than a scheduling cycle (sched_interval=2): a job that is not held would have started
[ "$(job_field "$job" JobState)" = PENDING ] || die "vgpu job $job is $(job_field "$job" JobState), expected PENDING (held)"
[ "$(job_field "$job" Priority)" = 0 ] || die "vgpu job $job has priority $(job_field "$job" Priority), expected 0 (held)"
reason=$(job_field "$job" Reason)
[[ "$reason" == JobHeld* ]] || die "vgpu job $job waits for '$reason', expected a hold (JobHeldUser or JobHeldAdmin)"
# With no tracker running, the job's comment still says what it waits for (not Comment=(null)).
job_comment_mentions "$job" "vgpu: held until the vgpu tracker (127.0.0.1:$(tracker_port)) secures its GPUs" \
    || die "held vgpu job $job does not say what it waits for: $(slurm scontrol show job "$job" | grep -i comment)"
grep -q 'vgpu: job held until the vgpu tracker' "$TESTBED_DIR/out/sbatch.err" \
    || die "sbatch did not pass on job_submit.lua's message; sbatch said: $(cat "$TESTBED_DIR/out/sbatch.err")"

# The owner of a held vgpu job (here: nobody) is refused when releasing it.
user_job=$(su nobody -s /bin/bash -c "cd /tmp && SLURM_CONF=$SLURM_CONF timeout $SLURM_CALL_TIMEOUT \
    sbatch --parsable --gres=vgpu:1 -o $TESTBED_DIR/out/%j.out --wrap true" 2>/dev/null | cut -d ';' -f 1)
[ -n "$user_job" ] || die "user nobody could not submit a vgpu job"
if refusal=$(su nobody -s /bin/bash -c "SLURM_CONF=$SLURM_CONF timeout $SLURM_CALL_TIMEOUT scontrol release $user_job" 2>&1); then
    die "user nobody released held vgpu job $user_job; job_submit.lua's slurm_job_modify should refuse that"
fi
grep -q 'Access/permission denied' <<<"$refusal" || die "nobody's release of job $user_job failed, but not as refused: $refusal"
[ "$(job_field "$user_job" JobState)" = PENDING ] || die "job $user_job is $(job_field "$user_job" JobState) after a refused release"

slurm scontrol release "$job"
expect_state "$job" COMPLETED 30
pass "vgpu-held: job $job (--gres=vgpu:3) was PENDING with reason $reason, its owner's release was refused" \
    "(\"$(head -n 1 <<<"$refusal")\"), root's release ran it to COMPLETED"
