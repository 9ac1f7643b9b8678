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

# Slurm records times in whole seconds, starts a waiting job when the job before it ends (its main scheduler runs on
# each job's end and submission, and every sched_interval=2 s), and backfills once a bf_interval: with the backfill
# cycles' times given to the simulator, a start can be off by the two rounded stamps and one sched_interval.
TOLERANCE=5
# The workload: seconds after the first submission, GPUs, run time (s), time limit (min).
WORKLOAD="0 4 50 1
0 2 70 2
0 1 40 1
0 2 30 1
0 3 60 2
0 1 20 1
0 1 50 2
0 4 30 1
5 2 40 1
5 1 25 1
10 2 35 1
10 4 20 1
15 1 45 2
20 3 30 1
20 1 15 1
30 2 40 1
40 1 30 1
45 4 25 1
60 2 20 1
60 1 35 1"

work=$TESTBED_DIR/out/simulator-agrees
mkdir -p "$work"
jobs=()
trap 'cancel_jobs "${jobs[@]}"; slurm scontrol setdebugflags -Backfill >/dev/null 2>&1 || true' EXIT

slurm scontrol setdebugflags +Backfill
log_lines=$(wc -l <"$TESTBED_DIR/log/slurmctld.log")
first=$(date +%s)
while read -r offset gpus run limit; do
    while [ "$(date +%s)" -lt $((first + offset)) ]; do sleep 0.2; done
    job=$(submit -p gpu --gres="gpu:$gpus" -c 1 -t "$limit" -J "sim-$gpus-$run" --wrap "sleep $run")
    [ -n "$job" ] || die "sbatch refused a job of the workload: $(tail -n 3 "$TESTBED_DIR/out/sbatch.err")"
    jobs+=("$job")
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

# Slurm's bf_interval (default 30 s) and the time of one backfill cycle (slurmctld logs each cycle's start with
# DebugFlags=Backfill), as seconds from the first submission that sacct recorded.
bf_interval=$(slurm scontrol show config | sed -n 's/^SchedulerParameters *= *.*bf_interval=\([0-9]*\).*/\1/p')
bf_interval=${bf_interval:-30}
cycle=$(tail -n +"$((log_lines + 1))" "$TESTBED_DIR/log/slurmctld.log" | grep -m 1 'BACKFILL: beginning' \
    | sed -n 's/^\[\([^]]*\)\].*/\1/p')
[ -n "$cycle" ] || die "slurmctld logged no backfill cycle (DebugFlags=Backfill): $(tail -n 5 "$TESTBED_DIR/log/slurmctld.log")"
first_submit=$(tail -n +2 "$sacct_file" | cut -d '|' -f 4 | sort | head -n 1)
phase=$(python3 -c "import datetime as d, sys; print(round((d.datetime.fromisoformat(sys.argv[1]) - d.datetime.fromisoformat(sys.argv[2])).total_seconds(), 3))" "$cycle" "$first_submit")
say "backfill every ${bf_interval}s; a cycle began at $cycle, ${phase}s after the first submission ($first_submit)"

"$VGPU" simulate --sacct "$sacct_file" --cluster 3x4x4 --policies slurm --backfill-interval "$bf_interval" \
    --backfill-phase "$phase" --compare-recorded --per-job >"$work/simulate.txt" \
    || die "vgpu simulate failed: $(cat "$work/simulate.txt")"
sed -n '/^recorded against simulated/,$p' "$work/simulate.txt"
# The per-job lines: job, submit, recorded start, simulated start, difference.
verdict=$(awk -v tolerance="$TOLERANCE" -v expected="${#jobs[@]}" '
    $1 ~ /^[0-9]+$/ && NF == 5 { n++; d = $5 < 0 ? -$5 : $5; if (d > worst) worst = d; if (d > tolerance) { bad++; off = off " " $1 } }
    END { if (n != expected) { printf "FAIL %d jobs compared, expected %d\n", n, expected; exit }
          if (bad) printf "FAIL %d of %d jobs start more than %d s apart:%s (largest %.1f s)\n", bad, n, tolerance, off, worst
          else printf "PASS all %d jobs start within %d s of the real Slurm (largest difference %.1f s)\n", n, tolerance, worst }' \
    "$work/simulate.txt")
say "$verdict"
case $verdict in PASS*) ;; *) exit 1 ;; esac
[ "$backfilled" -gt 0 ] || die "no job of the workload started by backfill: the workload no longer shows backfill"
pass "simulator-agrees: Slurm alone, ${#jobs[@]} jobs, $backfilled by backfill, each start within ${TOLERANCE}s"
