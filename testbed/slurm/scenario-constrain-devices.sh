#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN and VGPU_TESTBED_CGROUPS=yes: task/cgroup,
# proctrack/cgroup, ConstrainDevices=yes on cgroup v1): a GPU granted to a running vgpu job.
# A vgpu job on n1 (its own GPU from --gres=gpu:1, its assembly from the bridge's fake tracker)
# probes n1's four GPU device files every half second from inside its step. It cannot open a GPU
# it was not given; after the tracker's grant holder for one of them (vgpu-grant-JOB-v0, root's, in
# the lend partition, --gres=gpu:1 -w n1) starts, the bridge's job prolog admits that GPU into the
# job's devices cgroup and the same process opens it; once the holder is cancelled, the epilog drops
# it again. A holder of the same name submitted by another user outside the lend partition is
# refused and admits nothing. A step the job starts while the grant lasts gets the granted GPU too
# (from the grant record the prolog leaves), one started after it ended does not. The testbed's device files have no driver
# behind them: an admitted GPU opens as far as the missing driver ("No such device or address"),
# a refused one stops at the cgroup ("Operation not permitted").
# Run: VGPU_TESTBED_DIR=/tmp/vgpu-tb-bridge VGPU_TESTBED_PORT_BASE=18500 VGPU_TESTBED_CGROUPS=yes \
#      VGPU_SPANK_PLUGIN=$PWD/slurm-spank-bridge/vgpu_spank.so testbed/slurm/run-scenarios.sh constrain-devices
set -uo pipefail
source "$(dirname "$0")/common.sh"

grep -q '^required .*vgpu_spank\.so' "$TESTBED_DIR/etc/plugstack.conf" \
    || die "plugstack.conf loads no SPANK bridge; start the testbed with VGPU_SPANK_PLUGIN=.../vgpu_spank.so"
grep -q '^TaskPlugin=task/cgroup' "$SLURM_CONF" \
    || die "the testbed runs without task/cgroup; start it with VGPU_TESTBED_CGROUPS=yes"
PLUGIN=$(sed -n 's/^required \([^ ]*vgpu_spank\.so\).*/\1/p' "$TESTBED_DIR/etc/plugstack.conf")
T=$TESTBED_DIR/constrain-devices
PLUGSTACK=$TESTBED_DIR/etc/plugstack.conf
JOB_SUBMIT=$TESTBED_DIR/etc/job_submit.lua
mkdir -p "$T"/{log,out}
chmod 1777 "$T/out"
cp "$PLUGSTACK" "$T/plugstack.conf.testbed"
cp "$JOB_SUBMIT" "$T/job_submit.lua.testbed"
JOBS=()
PIDS=()
unset "${!VGPU_@}"
restore() {
    set +e
    [ "${#JOBS[@]}" -eq 0 ] || cancel_jobs "${JOBS[@]}"
    local p
    for p in "${PIDS[@]}"; do
        kill "$p" 2>/dev/null
    done
    cp "$T/plugstack.conf.testbed" "$PLUGSTACK"
    cp "$T/job_submit.lua.testbed" "$JOB_SUBMIT"
}
trap restore EXIT
# The bridge apart from the site's policy, as scenario spank-bridge does: every job as submitted.
let_every_job_through "$JOB_SUBMIT"
mark_slurmd_logs

python3 "$REPO_ROOT/slurm-spank-bridge/tests/fake_tracker.py" --port-file "$T/tracker.port" \
    --reply-file "$T/tracker.reply" --log "$T/tracker.log" >"$T/log/tracker.out" 2>&1 &
PIDS+=("$!")
wait_until 5 "the fake tracker listens" test -s "$T/tracker.port" || die "the fake tracker did not start"
echo "ok vgpus=1 local=0" >"$T/tracker.reply"
echo "required $PLUGIN tracker=127.0.0.1:$(cat "$T/tracker.port") lend_partition=vgpu-lend" >"$PLUGSTACK"

# The job's probe: each round, one line "round N: nvidia0=RESULT ... nvidia3=RESULT".
DEV=$TESTBED_DIR/dev/n1
PROBE='for round in $(seq 240); do line="round $round:"; for i in 0 1 2 3; do
  if out=$( (exec 3<'"$DEV"'/nvidia$i) 2>&1); then r=opened; else r=$(echo "${out##*: }" | tr " " _); fi
  line="$line nvidia$i=$r"; done; echo "$line"; sleep 0.5; done'
job=$(slurm sbatch --parsable -J constrained -w n1 --gres=gpu:1,vgpu:1 -o "$T/out/job.out" -e "$T/out/job.err" \
    --wrap "echo CUDA_VISIBLE_DEVICES=\${CUDA_VISIBLE_DEVICES-unset}; echo SLURM_JOB_GPUS=\$SLURM_JOB_GPUS; $PROBE")
JOBS+=("$job")
expect_state "$job" RUNNING 30
wait_until 20 "job $job probes its devices" grep -q '^round ' "$T/out/job.out" \
    || die "job $job does not probe: $(cat "$T/out/job.out" "$T/out/job.err" 2>/dev/null)"
own=$(sed -n 's/^SLURM_JOB_GPUS=//p' "$T/out/job.out")
say "vgpu job $job runs on n1 with its own GPU $own; its first probe: $(grep -m1 '^round ' "$T/out/job.out")"

# gpu_result GPU: the result of the job's latest probe of nvidiaGPU
gpu_result() {
    tail -n 1 "$T/out/job.out" | tr ' ' '\n' | sed -n "s/^nvidia$1=//p"
}
result_is() { [ "$(gpu_result "$1")" = "$2" ]; }
DENIED=Operation_not_permitted
ADMITTED=No_such_device_or_address

check "the job's own GPU $own passes the cgroup" result_is "$own" "$ADMITTED"
others=()
for i in 0 1 2 3; do
    [ "$i" = "$own" ] || others+=("$i")
done
for i in "${others[@]}"; do
    check "GPU $i, not the job's, is refused by the devices cgroup" result_is "$i" "$DENIED"
done

# A holder named like a grant, but from a user (nobody) in the job partition: refused.
forged=$(su -s /bin/sh nobody -c "SLURM_CONF=$SLURM_CONF sbatch --parsable -p gpu -w n1 --gres=gpu:1 \
    -J vgpu-grant-$job-v0 -o $T/out/forged.out --wrap 'sleep 600'" 2>"$T/out/forged.sbatch-err")
JOBS+=("$forged")
expect_state "$forged" RUNNING 30
forged_gpu=$(slurm scontrol show job -d "$forged" | grep -o 'gpu:1(IDX:[0-9]*)' | grep -o '[0-9]*)' | tr -d ')')
sleep 2
new_slurmd_log >"$T/log/slurmd-since-start.log"
# not root's, not in the lend partition: its prolog does not even ask slurmctld for its name
check "a forged grant (job $forged of nobody, GPU $forged_gpu) admits nothing" \
    bash -c "! grep -q 'grant holder $forged: GPU .* admitted' '$T/log/slurmd-since-start.log'"
check "the forged grant's GPU $forged_gpu stays refused" result_is "$forged_gpu" "$DENIED"
cancel_jobs "$forged"

# The tracker's grant: root, lend partition, one GPU on the job's node.
start=$(date +%s.%N)
holder=$(slurm sbatch --parsable -p vgpu-lend -w n1 --gres=gpu:1 -J "vgpu-grant-$job-v0" -o "$T/out/holder.out" \
    --wrap 'sleep 600')
JOBS+=("$holder")
expect_state "$holder" RUNNING 30
granted=$(slurm scontrol show job -d "$holder" | grep -o 'gpu:1(IDX:[0-9]*)' | grep -o '[0-9]*)' | tr -d ')')
say "grant holder $holder holds n1's GPU $granted"
if wait_until 20 "job $job opens GPU $granted" result_is "$granted" "$ADMITTED"; then
    ok "after grant holder $holder started, job $job opens GPU $granted ($(gpu_result "$granted"), $(echo "$(date +%s.%N) - $start" | bc) s after sbatch)"
else
    not_ok "after grant holder $holder started, job $job opens GPU $granted (latest probe: $(tail -n 1 "$T/out/job.out"))"
fi
check "slurmd's log: the prolog admitted GPU $granted into job $job's cgroup" \
    bash -c "grep -q 'grant holder $holder: GPU $granted (.*nvidia$granted, c 195:$granted) admitted into job $job vGPU 0' $TESTBED_DIR/log/slurmd-n1.log"
for i in "${others[@]}"; do
    [ "$i" = "$granted" ] || check "GPU $i, neither the job's nor granted, stays refused" result_is "$i" "$DENIED"
done
# A step the job starts while the grant lasts: Slurm gives its cgroup the step's own GRES only; the
# bridge admits the granted GPU there from the holder's grant record.
step_probe() {
    slurm srun --jobid="$job" --overlap -w n1 -n1 sh -c \
        "for i in $1; do if out=\$( (exec 3<$DEV/nvidia\$i) 2>&1); then echo nvidia\$i=opened; else echo \"nvidia\$i=\${out##*: }\"; fi; done" \
        2>>"$T/out/step.err"
}
step_probe "$granted ${others[*]}" >"$T/out/step.out"
sed 's/^/    new step: /' "$T/out/step.out"
check "the prolog left a root-only grant record for the job's later steps" test -f "/run/vgpu/grants/$job-$holder"
check "a new step of job $job opens the granted GPU $granted" grep -qx "nvidia$granted=No such device or address" "$T/out/step.out"
for i in "${others[@]}"; do
    [ "$i" = "$granted" ] || check "a new step is refused GPU $i" grep -qx "nvidia$i=Operation not permitted" "$T/out/step.out"
done
slurm scancel "$holder"
wait_until 30 "grant holder $holder has ended" job_has_ended "$holder"
if wait_until 20 "job $job is refused GPU $granted again" result_is "$granted" "$DENIED"; then
    ok "after grant holder $holder ended, job $job is refused GPU $granted again"
else
    not_ok "after grant holder $holder ended, job $job is refused GPU $granted again (latest probe: $(tail -n 1 "$T/out/job.out"))"
fi
check "the grant record for the job's later steps is gone" bash -c "! ls /run/vgpu/grants/$job-$holder 2>/dev/null"
check "slurmd's log: the epilog dropped GPU $granted" \
    bash -c "grep -q 'grant holder $holder: GPU $granted (.*) dropped from job $job vGPU 0' $TESTBED_DIR/log/slurmd-n1.log"
check "the job's own GPU $own still passes" result_is "$own" "$ADMITTED"
step_probe "$granted" >"$T/out/step-after.out"
check "a step started after the grant ended is refused GPU $granted" grep -qx "nvidia$granted=Operation not permitted" "$T/out/step-after.out"
check "the vgpu job's CUDA_VISIBLE_DEVICES is unset" grep -qx 'CUDA_VISIBLE_DEVICES=unset' "$T/out/job.out"
echo "---- slurmd-n1.log, the bridge's grant lines"
grep 'vgpu_spank: grant holder' "$TESTBED_DIR/log/slurmd-n1.log" | sed 's/^/    /'
echo "---- the job's probes at the grant's start and end"
grep -m1 "nvidia$granted=$ADMITTED" "$T/out/job.out" | sed 's/^/    /'
tail -n 1 "$T/out/job.out" | sed 's/^/    /'

if [ "$FAILED" -gt 0 ]; then
    die "constrain-devices: $FAILED of $((PASSED + FAILED)) checks failed"
fi
pass "constrain-devices: $PASSED checks"
