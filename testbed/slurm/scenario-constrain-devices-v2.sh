#!/usr/bin/env bash
# Scenario (24.11 testbed started with VGPU_SPANK_PLUGIN and VGPU_TESTBED_CGROUPS=v2: Slurm's own cgroup/v2 plugin,
# IgnoreSystemd=yes, ConstrainDevices=yes, on a kernel with cgroup v2 only, e.g. under testbed/slurm/in-uml.sh):
# a GPU granted to a running vgpu job through Slurm's device programs. On n1 a plain job of another user holds one
# GPU; a vgpu job holds another (--gres=gpu:1) and probes all four GPU device files from inside its step every
# round. Before the grant Slurm's device program lets the job open its own GPU only. The tracker's grant holder
# for one of the two free GPUs (vgpu-grant-JOB-v0, root's, in the lend partition) makes the bridge's job prolog
# replace the device program at the job's cgroup with vgpu_grants (Slurm's own instructions behind a
# grants map), and the same process opens the granted GPU; when the holder ends, the epilog takes it out of the
# map and the job is refused it again. Throughout, the job's own GPU opens and the neighbour's GPU and the other
# free one are refused: Slurm's own rules stay as they were. The device files have no driver behind them: an
# allowed GPU opens as far as the missing driver ("No such device or address"), a refused one stops at the
# device program ("Operation not permitted").
# Run (as root, from the repository root):
#   VGPU_TESTBED_SLURM=24.11 VGPU_TESTBED_CGROUPS=v2 VGPU_SPANK_PLUGIN=$PWD/slurm-spank-bridge/vgpu_spank.so \
#       testbed/slurm/in-uml.sh testbed/slurm/run-scenarios.sh constrain-devices-v2
set -uo pipefail
source "$(dirname "$0")/common.sh"

grep -q '^required .*vgpu_spank\.so' "$TESTBED_DIR/etc/plugstack.conf" \
    || die "plugstack.conf loads no SPANK bridge; start the testbed with VGPU_SPANK_PLUGIN=.../vgpu_spank.so"
grep -q '^CgroupPlugin=cgroup/v2' "$TESTBED_DIR/etc/cgroup.conf" 2>/dev/null \
    || die "the testbed runs without Slurm's cgroup/v2 plugin; start it with VGPU_TESTBED_SLURM=24.11 VGPU_TESTBED_CGROUPS=v2"
PLUGIN=$(sed -n 's/^required \([^ ]*vgpu_spank\.so\).*/\1/p' "$TESTBED_DIR/etc/plugstack.conf")
T=$TESTBED_DIR/constrain-devices-v2
PLUGSTACK=$TESTBED_DIR/etc/plugstack.conf
JOB_SUBMIT=$TESTBED_DIR/etc/job_submit.lua
# Wait this long for what the job's probe shows: under User-Mode Linux a round takes a second or more.
ROUND_WAIT=${VGPU_TESTBED_PROBE_WAIT:-90}
rm -rf "$T"
mkdir -p "$T"/{log,out}
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
let_every_job_through "$JOB_SUBMIT"
mark_slurmd_logs

# The device programs attached at a cgroup, by name, read back from the kernel. Built without the sanitizers the
# bridge's tests use: AddressSanitizer's shadow memory does not fit User-Mode Linux's address space.
GRANT_TOOL=$TESTBED_DIR/grant-tool/grant_tool
make -s -C "$REPO_ROOT/slurm-spank-bridge" BUILD="$TESTBED_DIR/grant-tool" SAN= "$GRANT_TOOL" >"$T/log/grant_tool.build" 2>&1 \
    || die "building slurm-spank-bridge's grant_tool failed: $(tail -n 5 "$T/log/grant_tool.build")"

python3 "$REPO_ROOT/slurm-spank-bridge/tests/fake_tracker.py" --port-file "$T/tracker.port" \
    --reply-file "$T/tracker.reply" --log "$T/tracker.log" >"$T/log/tracker.out" 2>&1 &
PIDS+=("$!")
wait_until 30 "the fake tracker listens" test -s "$T/tracker.port" || die "the fake tracker did not start"
echo "ok vgpus=1 local=0" >"$T/tracker.reply"
echo "required $PLUGIN tracker=127.0.0.1:$(cat "$T/tracker.port") lend_partition=vgpu-lend" >"$PLUGSTACK"

# gpu_of JOB: the index of the one GPU JOB holds on its node
gpu_of() {
    slurm scontrol show job -d "$1" | grep -o 'gpu:1(IDX:[0-9]*)' | grep -o '[0-9]*)' | tr -d ')'
}

# The neighbour: another user's plain GPU job on n1. Its output goes nowhere: under User-Mode Linux a file that
# slurmstepd creates for nobody on the host's file system (hostfs) belongs to root, and nobody cannot write it.
neighbour=$(su -s /bin/sh nobody -c "SLURM_CONF=$SLURM_CONF sbatch --parsable -p gpu -w n1 --gres=gpu:1 \
    -J neighbour -o /dev/null --wrap 'sleep 900'" 2>"$T/out/neighbour.sbatch-err")
[ -n "$neighbour" ] || die "the neighbour job was not accepted: $(cat "$T/out/neighbour.sbatch-err")"
JOBS+=("$neighbour")
expect_state "$neighbour" RUNNING 60
theirs=$(gpu_of "$neighbour")

# The job's probe: each round, one line "round N: nvidia0=RESULT ... nvidia3=RESULT".
DEV=$TESTBED_DIR/dev/n1
PROBE='for round in $(seq 900); do line="round $round:"; for i in 0 1 2 3; do
  if out=$( (exec 3<'"$DEV"'/nvidia$i) 2>&1); then r=opened; else r=$(echo "${out##*: }" | tr " " _); fi
  line="$line nvidia$i=$r"; done; echo "$line"; sleep 0.5; done'
job=$(slurm sbatch --parsable -J constrained-v2 -w n1 --gres=gpu:1,vgpu:1 -o "$T/out/job.out" -e "$T/out/job.err" \
    --wrap "echo SLURM_JOB_GPUS=\$SLURM_JOB_GPUS; $PROBE")
JOBS+=("$job")
expect_state "$job" RUNNING 60
wait_until "$ROUND_WAIT" "job $job probes its devices" grep -q '^round ' "$T/out/job.out" \
    || die "job $job does not probe: $(cat "$T/out/job.out" "$T/out/job.err" 2>/dev/null)"
own=$(sed -n 's/^SLURM_JOB_GPUS=//p' "$T/out/job.out")
free=()
for i in 0 1 2 3; do
    [ "$i" = "$own" ] || [ "$i" = "$theirs" ] || free+=("$i")
done
say "on n1: job $job (vgpu, root) holds GPU $own, job $neighbour (nobody) GPU $theirs; GPUs ${free[*]} are free"

CG=$(ls -d /sys/fs/cgroup/system.slice/n1_slurmstepd.scope/job_"$job" /sys/fs/cgroup/system.slice/slurmstepd.scope/job_"$job" \
    2>/dev/null | head -n 1)
[ -n "$CG" ] || die "job $job has no cgroup under /sys/fs/cgroup/system.slice/*slurmstepd.scope"
STEP_CG=$CG/step_batch/user
# programs STAGE: the device programs at the job's cgroup and its batch step's user cgroup, one line each (24.11
# attaches its one program, Slurm_Cgroup_v2, at the job's cgroup; the step's has none)
programs() {
    local dir names
    for dir in "$CG" "$STEP_CG"; do
        names=$("$GRANT_TOOL" programs "$dir" 2>&1 | sed 's/^$/(unnamed)/')
        echo "    $1: device programs at ${dir#/sys/fs/cgroup/}: $(grep -c . <<<"$names") ($(paste -sd ' ' - <<<"$names"))"
    done | tee -a "$T/out/programs.txt"
}

# gpu_result GPU: the result of the job's latest probe of nvidiaGPU
gpu_result() {
    tail -n 1 "$T/out/job.out" | tr ' ' '\n' | sed -n "s/^nvidia$1=//p"
}
result_is() { [ "$(gpu_result "$1")" = "$2" ]; }
DENIED=Operation_not_permitted
ALLOWED=No_such_device_or_address
# slurms_rules STAGE: the job's own GPU allowed, the neighbour's and every free GPU but EXCEPT refused
slurms_rules() {
    local stage=$1 except=${2:-} i
    check "$stage: the job's own GPU $own is allowed" result_is "$own" "$ALLOWED"
    check "$stage: the neighbour's GPU $theirs is refused" result_is "$theirs" "$DENIED"
    for i in "${free[@]}"; do
        [ "$i" = "$except" ] || check "$stage: the free GPU $i is refused" result_is "$i" "$DENIED"
    done
}
latest_round() {
    tail -n 1 "$T/out/job.out" | sed -n 's/^round \([0-9]*\):.*/\1/p'
}
round_after() { [ "$(latest_round)" -gt "$1" ] 2>/dev/null; }
# next_round: waits for a round that started after now, so that its line shows the verdicts as they are now
next_round() {
    local now
    now=$(latest_round)
    wait_until "$ROUND_WAIT" "job $job probes again" round_after "$((${now:-0} + 1))" \
        || not_ok "job $job probes again (latest probe: $(tail -n 1 "$T/out/job.out"))"
}
# vgpu_grants_at STAGE COUNT: COUNT of the job's cgroups had vgpu's program at STAGE
vgpu_grants_at() { [ "$(grep -c "$1: .*vgpu_grants" "$T/out/programs.txt")" -eq "$2" ]; }

echo "---- before the grant"
next_round
tail -n 1 "$T/out/job.out" | sed 's/^/    probe: /'
programs before
check "before: Slurm's one device program at the job's cgroup decides for the job" \
    grep -q "before: device programs at ${CG#/sys/fs/cgroup/}: 1 (Slurm_Cgroup_v2)" "$T/out/programs.txt"
slurms_rules before

echo "---- during the grant"
start=$(date +%s%N)
holder=$(slurm sbatch --parsable -p vgpu-lend -w n1 --gres=gpu:1 -J "vgpu-grant-$job-v0" -o "$T/out/holder.out" \
    --wrap 'sleep 900')
JOBS+=("$holder")
expect_state "$holder" RUNNING 60
granted=$(gpu_of "$holder")
say "grant holder $holder holds n1's GPU $granted"
if wait_until "$ROUND_WAIT" "job $job opens GPU $granted" result_is "$granted" "$ALLOWED"; then
    ok "during: the granted GPU $granted is allowed in the same process ($((($(date +%s%N) - start) / 1000000)) ms after sbatch)"
else
    not_ok "during: the granted GPU $granted is allowed in the same process (latest probe: $(tail -n 1 "$T/out/job.out"))"
fi
next_round
tail -n 1 "$T/out/job.out" | sed 's/^/    probe: /'
programs during
check "during: vgpu_grants, wrapping Slurm's program, decides at the job's cgroup" vgpu_grants_at during 1
slurms_rules during "$granted"
check "slurmd's log: the prolog admitted GPU $granted into job $job" \
    grep -q "grant holder $holder: GPU $granted (.*nvidia$granted, c 195:$granted) admitted into job $job vGPU 0" \
    "$TESTBED_DIR/log/slurmd-n1.log"

echo "---- after the grant"
slurm scancel "$holder"
wait_until 60 "grant holder $holder has ended" job_has_ended "$holder"
if wait_until "$ROUND_WAIT" "job $job is refused GPU $granted again" result_is "$granted" "$DENIED"; then
    ok "after: the GPU $granted is refused again"
else
    not_ok "after: the GPU $granted is refused again (latest probe: $(tail -n 1 "$T/out/job.out"))"
fi
next_round
tail -n 1 "$T/out/job.out" | sed 's/^/    probe: /'
programs after
check "after: vgpu_grants stays at the job's cgroup, deciding as Slurm's program did" vgpu_grants_at after 1
slurms_rules after
check "slurmd's log: the epilog dropped GPU $granted" \
    grep -q "grant holder $holder: GPU $granted (.*) dropped from job $job vGPU 0" "$TESTBED_DIR/log/slurmd-n1.log"
echo "---- slurmd-n1.log, the bridge's grant lines"
grep 'vgpu_spank: grant holder' "$TESTBED_DIR/log/slurmd-n1.log" | sed 's/^/    /'

if [ "$FAILED" -gt 0 ]; then
    die "constrain-devices-v2: $FAILED of $((PASSED + FAILED)) checks failed"
fi
pass "constrain-devices-v2: $PASSED checks"
