# What the scenarios that set `vgpu simulate` against the real Slurm share (sourced after common.sh and accounting.sh,
# not run): submitting a timed workload of sleep jobs, waiting until it has ended, reading sacct's record of it as
# `vgpu simulate --sacct` reads a site's, and printing the simulation's per-job comparison beside how each job started.
# shellcheck shell=bash

# The ids of the workload's jobs, in submission order (submit_workload_job appends).
WORKLOAD_JOBS=()

# submit_workload_job GRES RUN LIMIT [SBATCH-OPTION...]: one sleep job of the workload (-c 1, partition gpu), e.g.
# `submit_workload_job gpu:2 40 1` or `submit_workload_job vgpu:3 30 1 -w n2`; its name says what it asks.
submit_workload_job() {
    local gres=$1 run=$2 limit=$3 job
    shift 3
    job=$(submit -p gpu --gres="$gres" -c 1 -t "$limit" -J "sim-${gres/:/-}-$run" "$@" --wrap "sleep $run")
    [ -n "$job" ] || die "sbatch refused a job of the workload: $(tail -n 3 "$TESTBED_DIR/out/sbatch.err")"
    WORKLOAD_JOBS+=("$job")
}

# submit_timed_workload BASE WORKLOAD: each line of WORKLOAD is `OFFSET GRES RUN LIMIT [SBATCH-OPTION...]`, submitted
# OFFSET seconds after the epoch second BASE (submit_workload_job's arguments).
submit_timed_workload() {
    local base=$1 offset rest
    while read -r offset rest; do
        [ -n "$offset" ] || continue
        while [ "$(date +%s)" -lt $((base + offset)) ]; do sleep 0.1; done
        # shellcheck disable=SC2086 # rest is the job's words
        submit_workload_job $rest
    done <<<"$2"
}

workload_ended() {
    local job
    for job in "${WORKLOAD_JOBS[@]}"; do job_has_ended "$job" || return 1; done
}

# wait_workload_ended SECONDS: waits until every job of the workload has ended.
wait_workload_ended() {
    wait_until "$1" "every job of the workload has ended" workload_ended \
        || die "the workload did not end within $1 s: $(slurm squeue)"
}

# The sacct columns the scenarios read: the command the simulator's documentation gives an admin, and Flags (how Slurm
# started each job: SchedMain or SchedBackfill).
SACCT_COLUMNS=JobID,User,Account,Submit,Start,End,Timelimit,AllocTRES,NodeList,State,Comment,Flags

# record_sacct FILE SINCE: sacct's record (-X, one line a job, holders included) of the jobs submitted from the time
# stamp SINCE on, into FILE, once sacct has every job of the workload COMPLETED: slurmdbd stores a job's end a moment
# after slurmctld has it.
record_sacct() {
    local file=$1 since=$2
    sacct_has_workload() {
        slurm sacct --allusers --parsable2 --noconvert -X --starttime "$since" --endtime now -o "$SACCT_COLUMNS" \
            >"$file.new" || return 1
        local job
        for job in "${WORKLOAD_JOBS[@]}"; do
            grep -q "^$job|.*|COMPLETED|" "$file.new" || return 1
        done
        mv "$file.new" "$file"
    }
    wait_until 60 "sacct has every job's end" sacct_has_workload || die "sacct lacks jobs: $(cat "$file.new")"
}

# per_job_lines SIMULATE-OUTPUT: the per-job lines of `vgpu simulate --compare-recorded --per-job` (job, submit,
# recorded start, simulated start, difference, and under a borrowing policy the GPUs it borrowed).
per_job_lines() {
    grep -E '^  [^ ]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[-+][0-9.]+( +[0-9]+)?$' "$1"
}
