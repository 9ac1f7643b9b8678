#!/usr/bin/env bash
# Scenario (testbed started with VGPU_TESTBED_ACCOUNTING=yes): vgpu simulate's Slurm agrees with the real one. A
# workload of 20 sleep jobs (--gres=gpu:G, whole-minute time limits, some submitted later), sized so that some wait
# for a node and some start ahead of a waiting job by backfill, runs on the testbed; sacct's record of it is fed to
# `vgpu simulate --sacct ... --policies slurm`, with Slurm's backfill cadence (bf_interval, and when a backfill cycle
# ran, from slurmctld's log with DebugFlags=Backfill) and the nodes as user jobs see them (4 GPUs, MaxCPUsPerNode 4).
# Prints each job's recorded and simulated start, and passes when every job's differ by at most TOLERANCE seconds.
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/accounting.sh"

[ "$ACCOUNTING" = yes ] || die "scenario simulator-agrees needs a testbed with VGPU_TESTBED_ACCOUNTING=yes"

# What the simulation can match, and what it cannot. Slurm records times in whole seconds and starts a waiting job
# when the job before it ends (its main scheduler runs at each end and submission, and every sched_interval=2 s): a job
# Slurm's main scheduler starts, the simulation starts within a second or two. A job only backfill can start waits
# for a backfill cycle (bf_interval, 30 s), which the simulation runs at the same instants; but Slurm's backfill plans
# in slots of bf_resolution (60 s) and picks nodes by its own rules, so now and then the two start such a job (and
# those behind it) in different cycles, 30 s or more apart. The verdict: at least half the jobs start within
# JOB_TOLERANCE seconds, the mean of the differences (their sizes) is at most MEAN_TOLERANCE seconds (half a cycle),
# and so is the gap between the mean waits. (Backfilling at every event instead misses by 23-25 s on average.)
JOB_TOLERANCE=5
MEAN_TOLERANCE=15
# The workload: seconds after the second that follows a backfill cycle, GPUs, run time (s), time limit (min). The
# first job is submitted alone a second before that cycle, and the others arrive in seconds no cycle begins in
# (sacct's stamps are whole seconds: a job recorded in a cycle's second could be on either side of it). No run time is
# a multiple of bf_interval, so that jobs started by one cycle do not end in the second of a later one. So on every
# machine the same jobs run and wait at the next cycle (offset 29): the 3-GPU job waits for a node (the main
# scheduler then starts nothing behind it) while the 1-GPU jobs behind it fit beside others and end, by their
# limits, before it could start: backfill starts them. No two nodes can take that 3-GPU job at times in one
# bf_resolution slot (60 s), where 22.05 and 24.11 break the tie differently (22.05 the earliest node, 24.11 the
# tighter fit): the 2-GPU job beside it has a limit of 2 minutes.
# When the first cycle comes is not the workload's to choose: slurmctld's backfill thread, idle while nothing
# changes, begins a cycle about a second after a job arrives if it was idle, or up to bf_interval later if it slept,
# and then every bf_interval while jobs come and go. So a job outside the workload (CLOCK) starts the cadence, and the
# workload begins one interval after the cycle it brought.
CLOCK="1 100 2"
FIRST="4 50 1"
WORKLOAD="0 2 70 2
0 1 40 1
0 2 33 2
0 3 62 2
0 1 20 1
0 1 50 2
0 4 34 1
5 2 40 1
5 1 25 1
10 2 35 1
10 4 20 1
15 1 45 2
20 3 32 1
20 1 15 1
30 2 40 1
40 1 28 1
45 4 25 1
60 2 20 1
60 1 35 1"

work=$TESTBED_DIR/out/simulator-agrees
mkdir -p "$work"
jobs=()
clock_job=""
trap 'cancel_jobs ${clock_job:-} "${jobs[@]}"; slurm scontrol setdebugflags -Backfill >/dev/null 2>&1 || true' EXIT

slurm scontrol setdebugflags +Backfill
log_lines=$(wc -l <"$TESTBED_DIR/log/slurmctld.log")
submit_workload_job() {
    local gpus=$1 run=$2 limit=$3 job
    job=$(submit -p gpu --gres="gpu:$gpus" -c 1 -t "$limit" -J "sim-$gpus-$run" --wrap "sleep $run")
    [ -n "$job" ] || die "sbatch refused a job of the workload: $(tail -n 3 "$TESTBED_DIR/out/sbatch.err")"
    jobs+=("$job")
}
# backfill_cycle N: the time stamp of the Nth backfill cycle slurmctld logged since the scenario began.
backfill_cycle() {
    tail -n +"$((log_lines + 1))" "$TESTBED_DIR/log/slurmctld.log" | sed -n 's/^\[\([^]]*\)\].*backfill: beginning.*/\1/p' \
        | sed -n "$1p"
}
first_backfill_cycle() {
    backfill_cycle 1
}
backfill_cycle_logged() {
    [ -n "$(first_backfill_cycle)" ]
}
# Slurm's bf_interval (default 30 s).
bf_interval=$(slurm scontrol show config | sed -n 's/^SchedulerParameters *= *.*bf_interval=\([0-9]*\).*/\1/p')
bf_interval=${bf_interval:-30}
# shellcheck disable=SC2086 # CLOCK is three words
submit_workload_job $CLOCK
clock_job=${jobs[0]}
jobs=()
wait_until 40 "slurmctld logs a backfill cycle (DebugFlags=Backfill)" backfill_cycle_logged \
    || die "slurmctld logged no backfill cycle: $(tail -n 5 "$TESTBED_DIR/log/slurmctld.log")"
clock_cycle=$(first_backfill_cycle)
cancel_jobs "$clock_job"
clock_job=""
base=$(($(date -d "$clock_cycle" +%s) + bf_interval + 1))
while [ "$(date +%s)" -lt $((base - 2)) ]; do sleep 0.1; done
# shellcheck disable=SC2086 # FIRST is three words
submit_workload_job $FIRST
while read -r offset gpus run limit; do
    while [ "$(date +%s)" -lt $((base + offset)) ]; do sleep 0.1; done
    submit_workload_job "$gpus" "$run" "$limit"
done <<<"$WORKLOAD"
say "submitted ${#jobs[@]} jobs: ${jobs[*]}"

all_ended() {
    local job
    for job in "${jobs[@]}"; do job_has_ended "$job" || return 1; done
}
wait_until 300 "every job of the workload has ended" all_ended || die "the workload did not end: $(slurm squeue)"

sacct_file=$work/sacct.txt
ids=$(IFS=,; echo "${jobs[*]}")
# slurmdbd stores a job's end a moment after slurmctld has it: wait until sacct has every end.
sacct_complete() {
    slurm sacct --parsable2 --noconvert -X -j "$ids" -o JobID,User,Account,Submit,Start,End,Timelimit,AllocTRES,NodeList,State,Flags \
        >"$sacct_file.new" || return 1
    [ "$(grep -c '|COMPLETED|' "$sacct_file.new")" -eq "${#jobs[@]}" ] && mv "$sacct_file.new" "$sacct_file"
}
wait_until 60 "sacct has every job's end" sacct_complete || die "sacct lacks jobs: $(cat "$sacct_file.new")"
backfilled=$(grep -c 'SchedBackfill' "$sacct_file" || true)
say "sacct: ${#jobs[@]} jobs COMPLETED, $backfilled of them started by backfill (Flags SchedBackfill)"

# The cycle after the clock's, as seconds from the first submission sacct recorded.
cycle=$(backfill_cycle 2)
[ -n "$cycle" ] || die "slurmctld logged no second backfill cycle: $(tail -n 5 "$TESTBED_DIR/log/slurmctld.log")"
first_submit=$(tail -n +2 "$sacct_file" | cut -d '|' -f 4 | sort | head -n 1)
phase=$(python3 -c "import datetime as d, sys; print(round((d.datetime.fromisoformat(sys.argv[1]) - d.datetime.fromisoformat(sys.argv[2])).total_seconds(), 3))" "$cycle" "$first_submit")
say "backfill every ${bf_interval}s; a cycle began at $cycle, ${phase}s after the first submission ($first_submit)"

"$VGPU" simulate --sacct "$sacct_file" --cluster 3x4x4 --policies slurm --backfill-interval "$bf_interval" \
    --backfill-phase "$phase" --backfill-reserves all --compare-recorded --per-job >"$work/simulate.txt" \
    || die "vgpu simulate failed: $(cat "$work/simulate.txt")"
sed -n '/^recorded against simulated/,$p' "$work/simulate.txt"
# The per-job lines: job, submit, recorded start, simulated start, difference. Each job's line gets how Slurm
# started it (sacct's Flags: SchedMain or SchedBackfill).
awk -F '|' 'NR > 1 { split($11, flags, ","); print $1, flags[1] }' "$sacct_file" >"$work/how-started.txt"
verdict=$(awk -v job_tolerance="$JOB_TOLERANCE" -v mean_tolerance="$MEAN_TOLERANCE" -v expected="${#jobs[@]}" '
    FNR == NR { how[$1] = $2; next }
    $1 ~ /^[0-9]+$/ && NF == 5 {
        n++; d = $5 < 0 ? -$5 : $5; sum += d; recorded += $3 - $2; simulated += $4 - $2
        if (d <= job_tolerance) close_enough++; else off = off " " $1 " (" $5 " s, " how[$1] ")"
    }
    END {
        if (n != expected) { printf "FAIL %d jobs compared, expected %d\n", n, expected; exit }
        mean = sum / n; wait_gap = (simulated - recorded) / n; wait_gap = wait_gap < 0 ? -wait_gap : wait_gap
        ok = close_enough * 2 >= n && mean <= mean_tolerance && wait_gap <= mean_tolerance
        printf "%s %d of %d jobs start within %d s of the real Slurm, mean difference %.1f s, mean waits %.1f s apart",
            ok ? "PASS" : "FAIL", close_enough, n, job_tolerance, mean, wait_gap
        if (off != "") printf "; farther:%s", off
        printf "\n"
    }' "$work/how-started.txt" "$work/simulate.txt")
say "$verdict"
case $verdict in
    PASS*) ;;
    *)
        say "how Slurm placed them (sacct: JobID|Start|NodeList|Flags):"
        cut -d '|' -f 1,5,9,11 "$sacct_file" | sed 's/^/  /'
        exit 1
        ;;
esac
[ "$backfilled" -gt 0 ] || die "no job of the workload started by backfill: the workload no longer shows backfill"
pass "simulator-agrees: Slurm alone, ${#jobs[@]} jobs, $backfilled started by backfill"
