#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN and VGPU_TESTBED_ACCOUNTING=yes): sacct charges a borrowed GPU to
# the user and account that used it. User nobody (account physics) runs a vgpu:3 job on 1 local and 2 borrowed GPUs;
# the tracker submits its holder jobs on the lending nodes as nobody (root's sbatch --uid/--gid, [cluster]
# holders_as_borrower = on, the default) charged to account physics, their comment naming the borrowing job, its user
# and account, each holder's worker holding only the key of its one lend. sacct, read from slurmdbd's MariaDB after
# the job ended, shows the borrowing job and both holders as nobody's under physics, each holder with gres/gpu=1, and
# each holder's batch step's MaxRSS and memory request (and, with VGPU_TESTBED_CGROUPS, ConstrainRAMSpace=yes, its
# memory cgroup's peak), the figures the holder's --mem is set from; sacct -u nobody lists all three. Then the lend
# partition, open to users' groups so that holders can be theirs, is kept the tracker's by the rendered
# vgpu_job_submit.lua: nobody's own sbatch into it is refused with the module's reason (docs/admin/accounting.md).
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/accounting.sh"

[ "$ACCOUNTING" = yes ] || die "scenario accounting needs a testbed with VGPU_TESTBED_ACCOUNTING=yes"

# holder_memory_peak JOB NODE: the peak memory use and the limit of the job's memory cgroup (cgroup v1
# memory.max_usage_in_bytes, v2 memory.peak), or why there is none.
holder_memory_peak() {
    local v1=/sys/fs/cgroup/memory/slurm_$2/uid_$(id -u nobody)/job_$1 v2=/sys/fs/cgroup/system.slice/$2_slurmstepd.scope/job_$1
    if [ -r "$v1/memory.max_usage_in_bytes" ]; then
        echo "peak $(($(cat "$v1/memory.max_usage_in_bytes") / 1048576)) MiB, limit $(($(cat "$v1/memory.limit_in_bytes") / 1048576)) MiB (cgroup v1)"
    elif [ -r "$v2/memory.peak" ]; then
        echo "peak $(($(cat "$v2/memory.peak") / 1048576)) MiB, limit $(cat "$v2/memory.max") (cgroup v2)"
    else
        echo "none (the testbed constrains no memory: VGPU_TESTBED_CGROUPS=no)"
    fi
}

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
fill_leaving_one_idle_gpu
job=$(su nobody -s /bin/bash -c "cd /tmp && SLURM_CONF=$SLURM_CONF timeout $SLURM_CALL_TIMEOUT sbatch --parsable \
    --gres=vgpu:3 -J borrow-as-nobody -o $TESTBED_DIR/out/%j.out --wrap '$(vgpu_job_script --hold 10)'" \
    2>>"$TESTBED_DIR/out/sbatch.err" | cut -d ';' -f 1)
[ -n "$job" ] || die "user nobody could not submit a vgpu job: $(tail -n 3 "$TESTBED_DIR/out/sbatch.err")"
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
mapfile -t holders < <(holders_of "$job")
[ "${#holders[@]}" -eq 2 ] || die "job $job runs with ${#holders[@]} holder job(s), expected 2: $(slurm squeue -p vgpu-lend)"
# Under ConstrainRAMSpace=yes (VGPU_TESTBED_CGROUPS) each holder's memory cgroup records its peak: read it while the job
# holds its vGPUs after its first check, before the job's end removes the holders' cgroups.
wait_until 180 "job $job has checked its vGPUs and holds them" grep -q '^holding the vGPUs' "$TESTBED_DIR/out/$job.out" \
    || die "job $job does not hold its vGPUs: $(cat "$TESTBED_DIR/out/$job.out" 2>/dev/null)"
for holder in "${holders[@]}"; do
    say "holder $holder's memory cgroup: $(holder_memory_peak "$holder" "$(job_field "$holder" NodeList)")"
done
expect_state "$job" COMPLETED 180
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" "$node" 1 2
wait_until 30 "job $job's holders are gone" no_holders_of "$job" \
    || die "holders of job $job still in squeue after it ended: $(holders_of "$job" | tr '\n' ' ')"

# slurmctld sends a job's end to slurmdbd at once, but asynchronously: wait until sacct has every job's end.
jobs=$job,$(IFS=,; echo "${holders[*]}")
ended_in_sacct() {
    [ "$(slurm sacct -n -X -P -j "$jobs" -o State | grep -cvE '^(RUNNING|PENDING)$')" -eq 3 ]
}
wait_until 30 "sacct has the end of jobs $jobs" ended_in_sacct || die "sacct: $(slurm sacct -X -j "$jobs")"
say "sacct -X -j $jobs:"
slurm sacct -X -j "$jobs" -o JobID,JobName%20,User,Account,Partition,AllocTRES%44,State,Comment%84 | sed 's/^/testbed:   /'
say "the holders' batch steps (jobacct_gather/linux, sampled every 5 s):"
slurm sacct -j "$(IFS=,; echo "${holders[*]}")" -o JobID%16,MaxRSS,ReqMem,Elapsed,State | sed 's/^/testbed:   /'

row() { slurm sacct -n -X -P -j "$1" -o User,Account,AllocTRES,Comment; }
borrower_row=$(row "$job")
[[ "$borrower_row" == "nobody|$ACCOUNTING_USER_ACCOUNT|"* ]] || die "sacct charges job $job to '$borrower_row', expected nobody|physics"
for holder in "${holders[@]}"; do
    holder_row=$(row "$holder")
    IFS='|' read -r user account tres comment <<<"$holder_row"
    [ "$account" = "$ACCOUNTING_USER_ACCOUNT" ] \
        || die "sacct charges holder $holder to account '$account', not to the borrower's $ACCOUNTING_USER_ACCOUNT: $holder_row"
    [[ ",$tres," == *",gres/gpu=1,"* ]] || die "holder $holder's AllocTRES has no gres/gpu=1: $tres"
    [[ "$comment" == *"lent to job $job as its vGPU "*"(user nobody, account $ACCOUNTING_USER_ACCOUNT)" ]] \
        || die "holder $holder's comment does not name job $job and its user: $comment"
    [ "$user" = nobody ] || die "holder $holder runs as '$user', expected the borrower nobody"
done
pass "accounting: job $job of nobody (account $ACCOUNTING_USER_ACCOUNT) on $node borrowed 2 GPUs; sacct charges" \
    "both holders (${holders[*]}, gres/gpu=1 each) to user nobody, account $ACCOUNTING_USER_ACCOUNT, their comments" \
    "naming job $job"

# Per user: sacct -u lists what Slurm charges the user: the borrowing job and both holders.
say "sacct -X -u nobody -j $jobs (what user nobody is charged):"
slurm sacct -X -u nobody -j "$jobs" -o JobID,JobName%20,User,Account,AllocTRES%44,State | sed 's/^/testbed:   /'
charged_to_nobody=$(slurm sacct -n -X -P -u nobody -j "$jobs" -o JobID | sort -n | tr '\n' ' ')
expected=$(printf '%s\n' "$job" "${holders[@]}" | sort -n | tr '\n' ' ')
[ "$charged_to_nobody" = "$expected" ] \
    || die "sacct -u nobody lists '$charged_to_nobody' of jobs $jobs, expected '$expected' (the job and its holders)"
pass "accounting: per user, sacct -u nobody lists job $job and its holders ${holders[*]}"

# The lend partition admits every group (Slurm checks the job's user, and a holder is the borrower's); the rendered
# vgpu_job_submit.lua refuses any job there that root did not submit.
if refused=$(su nobody -s /bin/bash -c "cd /tmp && SLURM_CONF=$SLURM_CONF timeout $SLURM_CALL_TIMEOUT sbatch --parsable \
    -p vgpu-lend -w $node --gres=gpu:1 -o /dev/null --wrap 'sleep 1'" 2>&1); then
    cancel_jobs "${refused%%;*}"
    die "nobody's own sbatch into the lend partition vgpu-lend was accepted (job $refused): nothing keeps users out"
fi
say "nobody's sbatch -p vgpu-lend: $refused"
[[ "$refused" == *"vgpu: partition vgpu-lend holds the vgpu tracker's holder jobs; only the tracker (root) submits jobs there"* ]] \
    || die "nobody's sbatch into the lend partition was refused, but not with vgpu_job_submit.lua's reason: $refused"
pass "accounting: nobody's own sbatch into the lend partition vgpu-lend is refused: $(grep -o 'vgpu: partition.*' <<<"$refused" | head -n 1)"
