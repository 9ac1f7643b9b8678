#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN and VGPU_TESTBED_ACCOUNTING=yes): sacct charges a borrowed GPU to
# the account that used it. User nobody (account physics) runs a vgpu:3 job on 1 local and 2 borrowed GPUs; the
# tracker's holder jobs on the lending nodes are charged to account physics (sbatch --account: root, the tracker's
# user, has an association with physics, as accounting.sh sets up) and their comment names the borrowing job, its
# user and account. sacct, read from slurmdbd's MariaDB after the job ended, shows the borrowing job and both
# holders under physics, each holder with gres/gpu=1, and each holder's batch step's MaxRSS and memory request (and,
# with VGPU_TESTBED_CGROUPS, ConstrainRAMSpace=yes, its memory cgroup's peak), the figures the holder's --mem is set
# from. Per user, the holders are root's: sacct -u nobody lists the borrowing job alone. Then what this Slurm lets a
# holder owned by the borrower do: root's sbatch --uid=nobody into the lend partition (AllowGroups=root) is refused,
# and into a partition open to nobody (made for the probe and removed after) sacct charges user nobody, account
# physics (docs/admin/accounting.md, "Why holders do not run as the borrower").
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/accounting.sh"

[ "$ACCOUNTING" = yes ] || die "scenario accounting needs a testbed with VGPU_TESTBED_ACCOUNTING=yes"

# holder_memory_peak JOB NODE: the peak memory use and the limit of the job's memory cgroup (cgroup v1
# memory.max_usage_in_bytes, v2 memory.peak), or why there is none.
holder_memory_peak() {
    local v1=/sys/fs/cgroup/memory/slurm_$2/uid_0/job_$1 v2=/sys/fs/cgroup/system.slice/$2_slurmstepd.scope/job_$1
    if [ -r "$v1/memory.max_usage_in_bytes" ]; then
        echo "peak $(($(cat "$v1/memory.max_usage_in_bytes") / 1048576)) MiB, limit $(($(cat "$v1/memory.limit_in_bytes") / 1048576)) MiB (cgroup v1)"
    elif [ -r "$v2/memory.peak" ]; then
        echo "peak $(($(cat "$v2/memory.peak") / 1048576)) MiB, limit $(cat "$v2/memory.max") (cgroup v2)"
    else
        echo "none (the testbed constrains no memory: VGPU_TESTBED_CGROUPS=no)"
    fi
}

# A partition open to every user, for the probe of a job root submits as another user; removed after.
PROBE_PARTITION=vgpu-uid-probe
remove_probe_partition() {
    slurm scontrol delete PartitionName="$PROBE_PARTITION" 2>/dev/null || true
}

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker; remove_probe_partition' EXIT
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
    [ "$user" = root ] || die "holder $holder runs as '$user', expected the tracker's user root"
done
pass "accounting: job $job of nobody (account $ACCOUNTING_USER_ACCOUNT) on $node borrowed 2 GPUs; sacct charges" \
    "both holders (${holders[*]}, gres/gpu=1 each) to account $ACCOUNTING_USER_ACCOUNT, their comments naming job $job"

# Per user: sacct -u lists what Slurm charges the user; the holders are root's, so nobody's list has the borrowing job
# and neither holder.
say "sacct -X -u nobody -j $jobs (what user nobody is charged):"
slurm sacct -X -u nobody -j "$jobs" -o JobID,JobName%20,User,Account,AllocTRES%44,State | sed 's/^/testbed:   /'
charged_to_nobody=$(slurm sacct -n -X -P -u nobody -j "$jobs" -o JobID | tr '\n' ' ')
[ "$charged_to_nobody" = "$job " ] \
    || die "sacct -u nobody lists '$charged_to_nobody' of jobs $jobs, expected job $job alone (the holders are root's)"
pass "accounting: per user, sacct -u nobody lists job $job alone; holders ${holders[*]} are charged to root in" \
    "account $ACCOUNTING_USER_ACCOUNT"

# What a holder owned by the borrower would meet on this Slurm: root may submit as another user (sbatch --uid/--gid),
# but the lend partition is checked against the job's user, not the submitter.
nobody_gid=$(id -g nobody)
if refused=$(slurm sbatch --parsable --uid=nobody --gid="$nobody_gid" -p vgpu-lend -A "$ACCOUNTING_USER_ACCOUNT" \
    -w "$node" --gres=gpu:1 -o /dev/null --wrap 'sleep 1' 2>&1); then
    cancel_jobs "${refused%%;*}"
    die "root's sbatch --uid=nobody into the lend partition vgpu-lend was accepted (job $refused): the partition" \
        "no longer keeps users out"
fi
say "root's sbatch --uid=nobody -p vgpu-lend: $refused"
slurm scontrol create PartitionName="$PROBE_PARTITION" Nodes="$node" Hidden=YES MaxTime=INFINITE State=UP \
    || die "scontrol could not create the probe partition $PROBE_PARTITION"
probe_comment="probe: a GPU of $node as a holder of job $job would hold it (user nobody, account $ACCOUNTING_USER_ACCOUNT)"
probe=$(slurm sbatch --parsable --uid=nobody --gid="$nobody_gid" -p "$PROBE_PARTITION" -A "$ACCOUNTING_USER_ACCOUNT" \
    -w "$node" --gres=gpu:1 -J vgpu-uid-probe -o "$TESTBED_DIR/out/%j.out" --comment="$probe_comment" \
    --wrap 'id -un' 2>&1 | cut -d ';' -f 1) || die "root's sbatch --uid=nobody -p $PROBE_PARTITION failed: $probe"
expect_state "$probe" COMPLETED 60
[ "$(cat "$TESTBED_DIR/out/$probe.out")" = nobody ] \
    || die "probe job $probe of root's sbatch --uid=nobody ran as '$(cat "$TESTBED_DIR/out/$probe.out")', not nobody"
remove_probe_partition
probe_ended_in_sacct() {
    [ "$(slurm sacct -n -X -P -j "$probe" -o State)" = COMPLETED ]
}
wait_until 30 "sacct has the end of job $probe" probe_ended_in_sacct \
    || die "sacct: $(slurm sacct -X -j "$probe")"
say "sacct -X -j $probe (root's sbatch --uid=nobody --gid=$nobody_gid -A $ACCOUNTING_USER_ACCOUNT):"
slurm sacct -X -j "$probe" -o JobID,JobName%20,User,Account,Partition,AllocTRES%44,State,Comment%84 \
    | sed 's/^/testbed:   /'
IFS='|' read -r user account tres comment <<<"$(row "$probe")"
[ "$user|$account" = "nobody|$ACCOUNTING_USER_ACCOUNT" ] && [[ ",$tres," == *",gres/gpu=1,"* ]] \
    && [ "$comment" = "$probe_comment" ] \
    || die "sacct charges probe job $probe to '$user|$account|$tres|$comment', expected nobody|$ACCOUNTING_USER_ACCOUNT|gres/gpu=1"
pass "accounting: root's sbatch --uid=nobody is refused by the lend partition (vgpu-lend); in a partition open to" \
    "nobody it runs as nobody and sacct charges user nobody, account $ACCOUNTING_USER_ACCOUNT, gres/gpu=1 (job $probe)"
