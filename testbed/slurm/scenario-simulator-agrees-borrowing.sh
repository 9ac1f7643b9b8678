#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN and VGPU_TESTBED_ACCOUNTING=yes): vgpu simulate's borrowing agrees
# with the tracker on the real Slurm. With the tracker running, a workload of 14 sleep jobs runs: plain --gres=gpu
# jobs that fill nodes and wait for GPUs, and three --gres=vgpu jobs, two of which find no node with enough idle GPUs
# and borrow (one 2 GPUs from two nodes, one 1 GPU) while one fits its node; plain jobs wait for the GPUs the
# borrowers' holders keep. sacct's record (holders included, each known by its comment) goes to `vgpu simulate --sacct
# ... --policies slurm,borrow --borrowers vgpu-jobs --compare-with borrow`, with the testbed's tracker (its [policy],
# --poll 1) and the start-up delay measured here from sacct: each borrowing job's Start less its Submit (every one
# borrows when it arrives: the tracker's plan, then its holders, submitted at the plan, and their workers, then the
# job's release). The policy is
# borrow (borrowed GPUs stay remote until the job ends): a sleep job has no migration agent, so the tracker's hook moves
# nothing, and sleep runs no slower on a remote vGPU (slowdown 1). Prints each job's recorded and simulated start and
# borrowed GPUs; passes when every job borrowed as many GPUs in both and every start differs by at most JOB_TOLERANCE
# seconds plus the spread of the measured start-ups.
set -euo pipefail
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/accounting.sh"
source "$(dirname "$0")/simulated-workload.sh"

[ "$ACCOUNTING" = yes ] || die "scenario simulator-agrees-borrowing needs a testbed with VGPU_TESTBED_ACCOUNTING=yes"

# What may differ, and by how much. The tracker plans at its poll (1 s) and takes a moment for its pass; a holder ends
# when the tracker sees that its job has ended (at its next poll), and only then does Slurm start the job waiting for
# that GPU; a vgpu job that fits its node is released by the tracker, not started by Slurm at once; sacct's stamps are
# whole seconds: each of these is a second or two. And the simulation gives every borrowing job the mean start-up,
# while each had its own: a job's start may differ by that spread too (slowest less fastest, measured here).
JOB_TOLERANCE=5
# The workload: seconds after the first submission, GRES, run (s), time limit (min), sbatch options. No job's start
# may depend on a race between two events, on a slow machine either (the phases hold for start-ups of up to about
# 45 s; 15 to 30 s were seen on the 2-core development machine): every job waits only behind jobs that cannot start
# either (nothing is left to backfill, whose cycles the workload does not align with), nodes are named (-w) where
# Slurm's choice could differ from the simulation's best fit, and each borrowing job's plan, start and end fall where
# nothing else happens that could change them. While the tracker secures a borrowing job its local GPUs still look idle to Slurm, which would
# start a plain job there: no job that fits them arrives then. Phase 1: n1, n2, n3 left with 1, 2, 1 idle GPUs; V1
# (vgpu:4) on n2's 2 borrows n1's and n3's; once its holders run, P2 and P3 wait for those GPUs (-w n1, -w n3) and P4
# for a whole node (n1 at 110 s). Phase 2: V3 (vgpu:1) fits n2; B1 and B2 leave n2 and n3 with 2 and 1 idle GPUs; V2
# (vgpu:3) on n2's 2 borrows n3's, planned before P4 ends; C1a and C1b start on n1 once P4 has ended; C3 waits for
# V2's holder's GPU on n3.
WORKLOAD="0 gpu:3 110 2 -w n1
0 gpu:2 110 2 -w n2
0 gpu:3 110 2 -w n3
12 vgpu:4 40 1
34 gpu:1 10 1 -w n1
36 gpu:1 10 1 -w n3
38 gpu:4 40 1 -w n1
122 vgpu:1 90 2
130 gpu:1 80 2 -w n2
130 gpu:3 80 2 -w n3
136 vgpu:3 30 1
155 gpu:2 60 2 -w n1
155 gpu:2 60 2 -w n1
160 gpu:1 20 1 -w n3"

work=$TESTBED_DIR/out/simulator-agrees-borrowing
mkdir -p "$work"
trap 'cancel_jobs "${WORKLOAD_JOBS[@]}"; stop_tracker' EXIT
start_tracker
since=$(date +%Y-%m-%dT%H:%M:%S)
submit_timed_workload "$(($(date +%s) + 1))" "$WORKLOAD"
say "submitted ${#WORKLOAD_JOBS[@]} jobs: ${WORKLOAD_JOBS[*]}"
wait_workload_ended 400
sacct_file=$work/sacct.txt
record_sacct "$sacct_file" "$since"

# From sacct: each borrowing job's holders (their comment names it) and its start-up, its Start less its Submit, in
# two parts: to the plan (its holders' first Submit) and from there. The simulation's start-up delay is their mean.
python3 - "$sacct_file" "$work/borrowed.txt" >"$work/startup.txt" <<'MEASURE' || die "cannot measure the start-up: $(cat "$work/startup.txt")"
import datetime, re, sys
rows = [line.rstrip("\n").split("|") for line in open(sys.argv[1])]
column = {name: i for i, name in enumerate(rows[0])}
stamp = lambda text: datetime.datetime.fromisoformat(text).timestamp()
jobs, holders = {}, {}
for row in rows[1:]:
    lend = re.match(r"vgpu holder: a GPU of \S+ lent to job (\d+) as its vGPU \d+ ", row[column["Comment"]])
    if lend:
        holders.setdefault(lend.group(1), []).append(stamp(row[column["Submit"]]))
    else:
        jobs[row[column["JobID"]]] = row
with open(sys.argv[2], "w") as borrowed:
    for job in jobs:
        print(job, len(holders.get(job, [])), file=borrowed)
delays = []
for job, submits in sorted(holders.items()):
    start, submit = stamp(jobs[job][column["Start"]]), stamp(jobs[job][column["Submit"]])
    delays.append(start - submit)
    print(f"job {job}: {len(submits)} holder(s), planned {min(submits) - submit:.0f} s after its submission,"
          f" started {start - min(submits):.0f} s after its holders were submitted")
if not delays:
    sys.exit("no job borrowed: sacct has no holder job")
print(f"STARTUP {sum(delays) / len(delays):.1f} {min(delays):.0f} {max(delays):.0f}")
MEASURE
sed '/^STARTUP/d; s/^/testbed: /' "$work/startup.txt"
read -r _ startup fastest slowest < <(grep '^STARTUP' "$work/startup.txt")
say "start-up of a borrowing job (submitted -> started): mean ${startup} s, ${fastest} to ${slowest} s"

"$VGPU" simulate --sacct "$sacct_file" --cluster 3x4x4 --policies slurm,borrow --borrowers vgpu-jobs \
    --site-config "$TESTBED_DIR/etc/vgpu.conf" --tracker-poll 1 --overhead "startup-seconds=$startup" \
    --overhead slowdown.unknown=1 --compare-recorded --compare-with borrow --per-job >"$work/simulate.txt" \
    || die "vgpu simulate failed: $(cat "$work/simulate.txt")"
sed -n '/^passed over/p; /^recorded against simulated/,$p' "$work/simulate.txt"
tolerance=$((JOB_TOLERANCE + slowest - fastest))
verdict=$(per_job_lines "$work/simulate.txt" | awk -v tolerance="$tolerance" -v expected="${#WORKLOAD_JOBS[@]}" '
    FNR == NR { borrowed[$1] = $2; next }
    {
        n++; d = $5 < 0 ? -$5 : $5; sum += d; if (d > largest) largest = d
        if (d > tolerance) off = off " " $1 " (" $5 " s)"
        if ($6 != borrowed[$1]) wrong = wrong " " $1 " (" borrowed[$1] " recorded, " $6 " simulated)"
        if ($6 > 0) borrowers++
    }
    END {
        if (n != expected) { printf "FAIL %d jobs compared, expected %d\n", n, expected; exit }
        ok = off == "" && wrong == ""
        printf "%s %d jobs (%d borrowed), every start within %d s of the real one (5 s plus the start-ups'"'"' spread): %s," \
            " every job borrowed as in the real run: %s, mean difference %.1f s, largest %.1f s",
            ok ? "PASS" : "FAIL", n, borrowers, tolerance, off == "" ? "yes" : "no", wrong == "" ? "yes" : "no",
            sum / n, largest
        if (off != "") printf "; farther:%s", off
        if (wrong != "") printf "; borrowed otherwise:%s", wrong
        printf "\n"
    }' "$work/borrowed.txt" -)
say "$verdict"
case $verdict in PASS*) ;; *) exit 1 ;; esac
pass "simulator-agrees-borrowing: ${#WORKLOAD_JOBS[@]} jobs with the tracker, start-up ${startup} s measured from sacct"
