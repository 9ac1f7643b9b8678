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
source "$(dirname "$0")/simulated-workload.sh"

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
# The workload: seconds after the second that follows a backfill cycle, GRES, run time (s), time limit (min). The
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
# and then every bf_interval while jobs come and go. So a job outside the workload (the clock) starts the cadence,
# and the workload begins one interval after the cycle it brought.
FIRST="gpu:4 50 1"
WORKLOAD="0 gpu:2 70 2
0 gpu:1 40 1
0 gpu:2 33 2
0 gpu:3 62 2
0 gpu:1 20 1
0 gpu:1 50 2
0 gpu:4 34 1
5 gpu:2 40 1
5 gpu:1 25 1
10 gpu:2 35 1
10 gpu:4 20 1
15 gpu:1 45 2
20 gpu:3 32 1
20 gpu:1 15 1
30 gpu:2 40 1
40 gpu:1 28 1
45 gpu:4 25 1
60 gpu:2 20 1
60 gpu:1 35 1"

work=$TESTBED_DIR/out/simulator-agrees
mkdir -p "$work"
clock_job=""
trap 'cancel_jobs ${clock_job:-} "${WORKLOAD_JOBS[@]}"; slurm scontrol setdebugflags -Backfill >/dev/null 2>&1 || true' EXIT

slurm scontrol setdebugflags +Backfill
log_lines=$(wc -l <"$TESTBED_DIR/log/slurmctld.log")
# backfill_cycle N: the time stamp of the Nth backfill cycle slurmctld logged since the scenario began.
backfill_cycle() {
    tail -n +"$((log_lines + 1))" "$TESTBED_DIR/log/slurmctld.log" | sed -n 's/^\[\([^]]*\)\].*backfill: beginning.*/\1/p' \
        | sed -n "$1p"
}
backfill_cycle_logged() {
    [ -n "$(backfill_cycle 1)" ]
}
# Slurm's bf_interval (default 30 s).
bf_interval=$(slurm scontrol show config | sed -n 's/^SchedulerParameters *= *.*bf_interval=\([0-9]*\).*/\1/p')
bf_interval=${bf_interval:-30}
clock_job=$(submit -p gpu --gres=gpu:1 -c 1 -t 2 -J sim-clock --wrap "sleep 100")
[ -n "$clock_job" ] || die "sbatch refused the clock job: $(tail -n 3 "$TESTBED_DIR/out/sbatch.err")"
wait_until 40 "slurmctld logs a backfill cycle (DebugFlags=Backfill)" backfill_cycle_logged \
    || die "slurmctld logged no backfill cycle: $(tail -n 5 "$TESTBED_DIR/log/slurmctld.log")"
clock_cycle=$(backfill_cycle 1)
cancel_jobs "$clock_job"
clock_job=""
base=$(($(date -d "$clock_cycle" +%s) + bf_interval + 1))
while [ "$(date +%s)" -lt $((base - 2)) ]; do sleep 0.1; done
# sacct's record starts here: the clock job ended before
since=$(date +%Y-%m-%dT%H:%M:%S)
# shellcheck disable=SC2086 # FIRST is three words
submit_workload_job $FIRST
submit_timed_workload "$base" "$WORKLOAD"
say "submitted ${#WORKLOAD_JOBS[@]} jobs: ${WORKLOAD_JOBS[*]}"
wait_workload_ended 300
sacct_file=$work/sacct.txt
record_sacct "$sacct_file" "$since"
backfilled=$(grep -c 'SchedBackfill' "$sacct_file" || true)
say "sacct: ${#WORKLOAD_JOBS[@]} jobs COMPLETED, $backfilled of them started by backfill (Flags SchedBackfill)"

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
awk -F '|' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "Flags") column = i; next }
    { split($column, flags, ","); print $1, flags[1] }' "$sacct_file" >"$work/how-started.txt"
verdict=$(per_job_lines "$work/simulate.txt" | awk -v job_tolerance="$JOB_TOLERANCE" -v mean_tolerance="$MEAN_TOLERANCE" \
    -v expected="${#WORKLOAD_JOBS[@]}" '
    FNR == NR { how[$1] = $2; next }
    {
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
    }' "$work/how-started.txt" -)
say "$verdict"
case $verdict in
    PASS*) ;;
    *)
        say "how Slurm placed them (sacct: JobID|Start|NodeList|Flags):"
        cut -d '|' -f 1,5,9,12 "$sacct_file" | sed 's/^/  /'
        exit 1
        ;;
esac
[ "$backfilled" -gt 0 ] || die "no job of the workload started by backfill: the workload no longer shows backfill"
pass "simulator-agrees: Slurm alone, ${#WORKLOAD_JOBS[@]} jobs, $backfilled started by backfill"
