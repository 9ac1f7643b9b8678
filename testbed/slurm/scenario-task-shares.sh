#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): a step of several tasks on the node gives each task its own
# share of the job's vGPUs (docs/user/jobs.md, "Several tasks on the node"). A vgpu:2 job of 3 tasks starts on
# 1 local + 1 borrowed GPU (the hook paused); its batch script's vgpu run (one task) opens both vGPUs; its step `srun -n 2 vgpu run --hold` gives task 0 vGPU 0 and task 1
# vGPU 1, each with its own agent socket (`.vgpus-0-0`, `.vgpus-1-1`); during the hold `vgpu migrate JOB 1` moves
# vGPU 1 home through task 1's agent alone (task 1 reports 1 migration, task 0 none) and both check their data
# after. Its step `srun -n 3 vgpu run` is refused in every task with vgpu run's message, before any vGPU is
# opened. Then, on the emptied cluster, a vgpu:4 job on 4 local GPUs runs `srun -n 4` (one vGPU each) and
# `srun -n 2` (vGPUs 0-1 and 2-3). No holder is left.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
job=
job4=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"} ${job4:+"$job4"}; stop_tracker' EXIT
start_tracker
config=$TESTBED_DIR/etc/vgpu.conf
"$VGPU" hook pause --config "$config"
# Three CPUs stay free beside each node's idle GPU: the job's three tasks.
fill_leaving_one_idle_gpu 3
run="$VGPU run --local-backend $TESTBED_GPUS"
script=$(printf '%s\n' 'echo "VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' \
    "$run --workload vector-add; echo \"batch status=\$?\"" \
    "srun -n 2 -l $run --hold 25; echo \"two tasks status=\$?\"" \
    "srun -n 3 -l $run; echo \"three tasks status=\$?\"")
job=$(submit --gres=vgpu:2 -N 1 -n 3 -J task-shares --wrap "$script")
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
output=$TESTBED_DIR/out/$job.out
holding() { [ "$(grep -c '^[01]: holding the vGPUs' "$output")" -eq 2 ]; }
wait_until 90 "both tasks of job $job hold their vGPUs" holding || die "the two tasks did not both hold: $(cat "$output")"
assembly=$(sed -n 's/^VGPU_ASSEMBLY=//p' "$output")
[[ "$assembly" =~ ^0=local:[0-9]+,1=remote: ]] || die "job $job did not start on 1 local + 1 borrowed GPU: $assembly"
say "job $job runs on $node with $assembly; both tasks hold"
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then slurm scancel "$fill"; fi
done
moved=$(migrate_home "$config" "$job" 1)
say "vgpu migrate $job 1: $moved"
expect_state "$job" COMPLETED 120

# task T's lines, without srun's label
task() { sed -n "s/^$1: //p" "$output"; }
expect_line() { # expect_line TASK REGEX WHAT
    task "$1" | grep -Eq "$2" || die "task $1 of job $job: $3; its lines: $(task "$1")"
}
for t in 0 1; do
    expect_line "$t" "^vgpu job on node $node: 1 vGPUs \(" "does not say it has 1 vGPU"
    expect_line "$t" "^holding the vGPUs .* the agent on .*\.vgpus-$t-$t takes" "has no agent socket of its own (.vgpus-$t-$t)"
    [ "$(task "$t" | grep -Ec '^vgpu [0-9]+: (local|remote)')" -eq 1 ] || die "task $t lists not 1 vGPU: $(task "$t")"
    [ -z "$(task "$t" | grep -E '^(PASS|FAIL)  vgpu ' | grep -Ev "^(PASS|FAIL)  vgpu $t ")" ] \
        || die "task $t checked a vGPU not its own: $(task "$t" | grep -E '^(PASS|FAIL)  vgpu ')"
    [ "$(task "$t" | grep -c '^PASS: 1 of 1 vGPUs')" -eq 2 ] || die "task $t did not pass before and after its hold: $(task "$t")"
    ! task "$t" | grep -q '^FAIL' || die "task $t failed a check: $(task "$t" | grep '^FAIL')"
done
expect_line 0 '^vgpu 0: local' "does not list vGPU 0 local"
expect_line 1 '^vgpu 1: remote' "does not list vGPU 1 remote"
expect_line 0 '^vgpu 0: now on .* after 0 migration\(s\)' "moved, though the order was for vGPU 1"
expect_line 1 '^vgpu 1: now on gpu [0-9]+ \([a-z]+\) after 1 migration\(s\)' "does not report vGPU 1 moved home"
expect_line 1 '^PASS: 1 of 1 vGPUs \(1 local, 0 remote\)' "does not pass on vGPU 1 at home"
# The batch script is one task, whatever the job's task count: its vgpu run opens every vGPU.
grep -q '^PASS: 2 of 2 vGPUs (1 local, 1 remote)' "$output" && grep -qx 'batch status=0' "$output" \
    || die "vgpu run in the batch step of job $job did not pass on both vGPUs: $(cat "$output")"
grep -qx 'two tasks status=0' "$output" || die "the two-task step did not exit 0: $(cat "$output")"
refusal="vgpu run: this step runs 3 tasks on this node and the job has 2 vGPUs, which do not divide equally among"
refusal+=" them: each task gets its own vGPUs, so submit with --gres=vgpu:N where N is a multiple of 3 (e.g. 3 for one"
refusal+=" vGPU per task), or run 1 or 2 task(s) per node"
for t in 0 1 2; do
    task "$t" | grep -qxF "$refusal" || die "task $t of the three-task step was not refused with vgpu run's message: $(task "$t")"
done
grep -qx 'three tasks status=2' "$output" || die "the three-task step did not exit 2: $(cat "$output")"
[ "$(sed -n '/^two tasks status=/,$p' "$output" | grep -Ec '^[0-9]: (vgpu [0-9]|PASS|FAIL)')" -eq 0 ] \
    || die "the refused step opened vGPUs: $(cat "$output")"
wait_until 30 "job $job's holders are gone" no_holders_of "$job" \
    || die "holders of job $job still in squeue after it ended: $(holders_of "$job" | tr '\n' ' ')"
say "job $job: task 0 on vGPU 0, task 1 on vGPU 1 (moved home through its agent alone); 3 tasks refused"

# Four tasks of one vGPU each, then two of two, on a node of 4 idle GPUs.
cancel_jobs "${FILL_JOBS[@]}"
FILL_JOBS=()
script=$(printf '%s\n' "srun -n 4 -l $run; echo \"four tasks status=\$?\"" \
    "srun -n 2 -l $run; echo \"two tasks status=\$?\"")
job4=$(submit --gres=vgpu:4 -N 1 -n 4 -J task-shares-4 --wrap "$script")
expect_state "$job4" COMPLETED 180
output=$TESTBED_DIR/out/$job4.out
grep -qx 'four tasks status=0' "$output" && grep -qx 'two tasks status=0' "$output" \
    || die "job $job4's steps did not both exit 0: $(cat "$output")"
four=$(sed -n '1,/^four tasks status=/p' "$output")
two=$(sed -n '/^four tasks status=/,$p' "$output")
for t in 0 1 2 3; do
    grep -Eq "^$t: vgpu $t: local" <<<"$four" || die "task $t of 4 does not list vGPU $t: $four"
    [ "$(grep -Ec "^$t: vgpu [0-9]+: (local|remote)" <<<"$four")" -eq 1 ] || die "task $t of 4 lists not 1 vGPU: $four"
    [ -z "$(grep -E "^$t: (PASS|FAIL)  vgpu " <<<"$four" | grep -Ev "^$t: PASS  vgpu $t ")" ] \
        || die "task $t of 4 checked a vGPU not its own, or failed: $four"
    grep -q "^$t: PASS: 1 of 1 vGPUs (1 local, 0 remote)" <<<"$four" || die "task $t of 4 did not pass: $four"
done
for t in 0 1; do
    first=$((2 * t))
    [ "$(grep -Ec "^$t: vgpu ($first|$((first + 1))): local" <<<"$two")" -eq 2 ] \
        || die "task $t of 2 does not list vGPUs $first-$((first + 1)): $two"
    [ "$(grep -Ec "^$t: vgpu [0-9]+: (local|remote)" <<<"$two")" -eq 2 ] || die "task $t of 2 lists not 2 vGPUs: $two"
    [ -z "$(grep -E "^$t: (PASS|FAIL)  vgpu " <<<"$two" | grep -Ev "^$t: PASS  vgpu ($first|$((first + 1))) ")" ] \
        || die "task $t of 2 checked a vGPU not its own, or failed: $two"
    grep -q "^$t: PASS: 2 of 2 vGPUs (2 local, 0 remote)" <<<"$two" || die "task $t of 2 did not pass: $two"
done
pass "task-shares: job $job (vgpu:2 on $assembly) gave task 0 vGPU 0 and task 1 vGPU 1, each its own agent;" \
    "vgpu migrate moved vGPU 1 home through task 1's agent alone; 3 tasks were refused with vgpu run's message;" \
    "job $job4 (vgpu:4) gave 4 tasks one vGPU each and 2 tasks vGPUs 0-1 and 2-3"
