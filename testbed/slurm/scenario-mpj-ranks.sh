#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN, Debian's libmpj-java installed): MPJ Express ranks on a job's
# vGPUs, one of them borrowed and moved home by the hook while the ranks run. examples/mpj/LennardJonesRanks.java,
# compiled here against /usr/share/java/mpj.jar and vgpu.jar as a Debian user would, runs under
# `vgpu run --ranks 3 -- java` in a vgpu:3 job on its node's 2 idle GPUs + 1 borrowed (rank i on vGPU i, all ranks
# threads of one JVM). Once the ranks compute, the filler on the job's node ends: the hook claims the freed GPU and
# the agent in the ranks' JVM moves the borrowed vGPU home while they run (the job is still running when the tracker
# has it home); the ranks' results equal a single rank's bit for bit (MATCH) and the lender's holder ends.
set -euo pipefail
source "$(dirname "$0")/common.sh"

[ -f /usr/share/java/mpj.jar ] || die "MPJ Express is not installed: apt-get install libmpj-java"

# ranks_started FILE: each of the 3 ranks said which vGPU it computes on.
ranks_started() {
    [ "$(grep -Ec '^rank [0-2] of 3 on vGPU [0-2] ' "$1" 2>/dev/null)" -eq 3 ]
}

# borrowed_home: the tracker has the job's one borrowed vGPU home.
borrowed_home() {
    [ "$(tracker_request status | grep "^assembly job=$job " | grep -o "/home/" | wc -l)" -eq 1 ]
}

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker

# The job's node keeps 2 GPUs idle, every other node 1: the job gets 2 local GPUs and borrows 1.
node=${TESTBED_NODES[0]}
for fill_node in "${TESTBED_NODES[@]}"; do
    idle=1
    [ "$fill_node" = "$node" ] && idle=2
    FILL_JOBS+=("$(submit --gres=gpu:$((TESTBED_GPUS_PER_NODE - idle)) \
        -c $((TESTBED_CPUS_PER_NODE - TESTBED_GPUS_PER_NODE - 1)) -w "$fill_node" -J "fill-$fill_node" --wrap 'sleep 600')")
done
for fill in "${FILL_JOBS[@]}"; do
    expect_state "$fill" RUNNING 30
done

jdk=${JAVA_HOME:+$JAVA_HOME/bin/}
programs=$TESTBED_DIR/out/mpj-ranks
rm -rf "$programs" && mkdir -p "$programs"
"${jdk}javac" -cp "/usr/share/java/mpj.jar:$REPO_ROOT/job-wrapper/target/vgpu.jar" -d "$programs" \
    "$REPO_ROOT/examples/mpj/LennardJonesRanks.java" || die "the MPJ example does not compile against mpj.jar and vgpu.jar"

# at least 200 steps and 40 s: long enough for the hook to see the freed GPU and move the vGPU
job=$(submit --gres=vgpu:3 -w "$node" -J mpj-ranks --wrap "$(printf '%s\n' \
    'echo "VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' \
    "$VGPU run --local-backend emulated --ranks 3 -- ${jdk}java -cp $programs LennardJonesRanks 200 40" \
    'echo "ranks status=$?"')")
expect_state "$job" RUNNING 60
output=$TESTBED_DIR/out/$job.out
wait_until 60 "job $job's 3 ranks compute" ranks_started "$output" \
    || die "the ranks of job $job did not start: $(cat "$output" 2>/dev/null)"
assembly=$(sed -n 's/^VGPU_ASSEMBLY=//p' "$output")
[ "$(tr ',' '\n' <<<"$assembly" | grep -c '=local:')" -eq 2 ] && [ "$(tr ',' '\n' <<<"$assembly" | grep -c '=remote:')" -eq 1 ] \
    || die "job $job is not on 2 local GPUs + 1 borrowed: VGPU_ASSEMBLY=$assembly"
mapfile -t lender_holders < <(holders_of "$job")
[ "${#lender_holders[@]}" -eq 1 ] || die "job $job has ${#lender_holders[@]} holders, expected 1"

before=$(started_migrations)
slurm scancel "${FILL_JOBS[0]}"
wait_until 30 "the hook starts a migration" migrations_started_more_than "$before" \
    || die "no migration: $(tail -n 20 "$TESTBED_DIR/log/tracker.log")"
wait_until 60 "job $job's borrowed vGPU is home" borrowed_home \
    || die "not home: $(tracker_request status | grep "^assembly job=$job "); $(grep -E 'migration [0-9]+:' "$TESTBED_DIR/log/tracker.log" | tail -n 8)"
[ "$(job_field "$job" JobState)" = RUNNING ] || die "job $job ended before its vGPU was home: $(cat "$output")"
wait_until 30 "lender holder ${lender_holders[0]} has ended" job_has_ended "${lender_holders[0]}" \
    || die "holder ${lender_holders[0]} still runs"

expect_state "$job" COMPLETED 240
for expected in "ranks status=0" \
    "MATCH: 3 ranks on 3 vGPUs equal a single rank on vGPU 0, bit for bit (positions, velocities, energies)"; do
    grep -qxF "$expected" "$output" || die "job $job's output lacks '$expected': $(cat "$output")"
done
# the ranks' JVM reports the move before rank 0 prints the ranks' result (and computes the single rank's)
moved_at=$(grep -En '^vgpu: migration: vgpu 2 moved .*\(remote\) -> gpu [0-9]+' "$output" | head -n 1 | cut -d: -f1)
ranks_done_at=$(grep -n '^3 ranks, 108 atoms, ' "$output" | head -n 1 | cut -d: -f1)
[ -n "$moved_at" ] || die "the ranks' JVM did not report the move of vGPU 2 home: $(cat "$output")"
[ -n "$ranks_done_at" ] && [ "$moved_at" -lt "$ranks_done_at" ] \
    || die "vGPU 2 did not move while the ranks ran: $(cat "$output")"
say "the ranks' JVM: $(sed -n "${moved_at}p" "$output")"
steps=$(sed -n 's/^3 ranks, 108 atoms, \([0-9]*\) steps: .*/\1/p' "$output")
wait_until 30 "job $job's holders are gone" no_holders_of "$job" \
    || die "holders of job $job still in squeue after it ended: $(holders_of "$job" | tr '\n' ' ')"
pass "mpj-ranks: 3 MPJ Express ranks of job $job on 2 local + 1 borrowed vGPUs (assembly $assembly); the borrowed" \
    "vGPU moved home while they ran; after $steps steps their results equal a single rank's bit for bit"
