#!/usr/bin/env bash
# The bridge's grant admission on a REAL cgroup2 hierarchy with device programs (root, BPF): cgroups
# laid out as Slurm's cgroup/v2 plugin makes them (<root>/system.slice/slurmstepd.scope/job_J/
# step_S/user/task_T; <root> is a fresh cgroup under the cgroup2 mount standing in for it) get a
# device program of the shape Slurm attaches (c 195:6, the job's own GPU, allowed; c 195:7 and 8,
# the node's other GPUs, denied; everything else allowed) at the job and at each step's user cgroup with
# BPF_F_ALLOW_OVERRIDE, and at a task with no flag, as Slurm does. Processes in two steps cannot open
# a GPU device file (mknod c 195 N) until the prolog's code admits the GPU (replacing each program by
# the bridge's wrapper of it), a step started after the admission gets it from the grant records as
# its tasks do, and nobody can after the epilog's code drops it; /dev/null's numbers (Slurm's
# default "allow") stay open throughout. No NVIDIA driver here: an admitted c 195:N opens as far as
# the driver ("No such device or address"), a refused one fails in the cgroup ("Operation not
# permitted"). Cleans up after itself.
# Usage: tests/cgroup-v2-test.sh GRANT_TOOL (make test-cgroup builds it and runs this).
set -euo pipefail
tool=$1
say() { echo "cgroup-v2-test: $*"; }
[ "$(id -u)" -eq 0 ] || { say "SKIPPED: needs root"; exit 0; }
unified=$("$tool" cgroup2 2>/dev/null) || { say "SKIPPED: no cgroup2 file system mounted here"; exit 0; }
[ -w "$unified" ] || { say "SKIPPED: $unified is not writable"; exit 0; }

node=cgtest$$
uid=4242
job=$((4000000000 + $$ % 100000))
holder=$((job + 7))
root=$unified/vgpu-cgtest-$$
scope=$root/system.slice/slurmstepd.scope
cg=$scope/job_$job
tmp=$(mktemp -d /tmp/vgpu-cgroup-v2-test.XXXXXX)
# shellcheck source=tests/cgroup-prober.sh
. "$(dirname "$0")/cgroup-prober.sh"
cleanup() {
    local status=$?
    prober_stop_all
    # a cgroup goes once its processes have: children first; its programs go with it
    if [ -d "$root" ] && ! find "$root" -depth -type d -exec rmdir {} +; then
        echo "cgroup-v2-test: could not remove $root" >&2
        status=1
    fi
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
fail() {
    echo "cgroup-v2-test: FAIL: $*" >&2
    exit 1
}

mkdir -p "$tmp/dev" "$tmp/agent"
chmod 0700 "$tmp/agent"
mknod "$tmp/dev/nvidia6" c 195 6   # the job's own GPU
mknod "$tmp/dev/nvidia7" c 195 7   # the freed GPU the tracker grants
mknod "$tmp/dev/nvidia8" c 195 8   # a second grant
mknod "$tmp/dev/null" c 1 3        # Slurm's rules leave it to the default verdict: allowed
cat >"$tmp/gres.conf" <<GRES
NodeName=$node Name=gpu File=$tmp/dev/nvidia[6-8]
GRES

mkdir -p "$cg/step_0/user/task_0"
if ! "$tool" slurm-like "$cg" override 6 7 8 2>"$tmp/err"; then
    say "SKIPPED: device programs cannot be attached here: $(cat "$tmp/err")"
    exit 0
fi
"$tool" slurm-like "$cg/step_0/user" override 6 7 8
prober_start step0 "$cg/step_0/user/task_0" || fail "no probe process in step_0"
say "job cgroup $cg; step_0/user/task_0 holds pid $prober_pid_step0"

DENIED="Operation not permitted"
NO_DRIVER="No such device or address"
expect() {
    local step=$1 file=$2 want=$3 got
    got=$(probe "$step" "$tmp/dev/$file")
    say "$4: open $file in $step: $got"
    [ "$got" = "$want" ] || fail "open $file in $step: got '$got', expected '$want'"
}
programs() {
    local got
    got=$("$tool" programs "$1" | tr '\n' ' ')
    say "device programs at job_$job${1#"$cg"}: $got"
    [ "$got" = "$2 " ] || fail "device programs at $1: got '$got', expected '$2'"
}
grants() { "$tool" --cgroup2 "$root" "$@"; }

expect step0 nvidia6 "$NO_DRIVER" "the job's own GPU (Slurm's rule)"
expect step0 nvidia7 "$DENIED" "before the grant"
expect step0 null opened "a device Slurm's program leaves to its default"

grants admit "$node" "$uid" "$job" "$tmp/gres.conf" 1 "$tmp/agent" "$holder" | tee "$tmp/out"
grep -q "(2 device programs)" "$tmp/out" || fail "admission did not carry into the job's and the step's program"
programs "$cg" vgpu_grants
programs "$cg/step_0/user" vgpu_grants
expect step0 nvidia7 "$NO_DRIVER" "after the prolog's admission, same process"
expect step0 nvidia8 "$DENIED" "another GPU stays refused"
expect step0 nvidia6 "$NO_DRIVER" "the job's own GPU (Slurm's verdict, kept)"
expect step0 null opened "Slurm's default verdict, kept"
grants admit "$node" "$uid" "$job" "$tmp/gres.conf" 1 >/dev/null
programs "$cg/step_0/user" vgpu_grants   # admitted twice: still one program, no wrapper of a wrapper

# A step started after the grant: Slurm attaches its own program, without the grant.
mkdir -p "$cg/step_1/user/task_0"
"$tool" slurm-like "$cg/step_1/user" override 6 7 8
prober_start step1 "$cg/step_1/user/task_0" || fail "no probe process in step_1"
expect step1 nvidia7 "$DENIED" "a new step, before its tasks' re-admission"
grants readmit "$node" "$uid" "$job" "$tmp/agent" | tee "$tmp/out"
grep -q "readmitted 1 granted device" "$tmp/out" || fail "the grant record was not readmitted"
programs "$cg/step_1/user" vgpu_grants
expect step1 nvidia7 "$NO_DRIVER" "the new step after the re-admission"
expect step1 nvidia6 "$NO_DRIVER" "the new step's own GPU"

# One admission at a time per job: another one (holding the job cgroup's lock) is waited for.
flock -x "$cg" -c "sleep 2" &
locker=$!
sleep 0.3
started=$(date +%s%N)
grants admit "$node" "$uid" "$job" "$tmp/gres.conf" 1 >/dev/null
waited=$(( ($(date +%s%N) - started) / 1000000 ))
wait "$locker"
say "an admission while another holds the job's lock waited ${waited} ms"
[ "$waited" -ge 1000 ] || fail "the admission did not wait for the job's lock (${waited} ms)"

# A second grant reaches every step at once (one grants map for the job's programs).
grants admit "$node" "$uid" "$job" "$tmp/gres.conf" 2 "$tmp/agent" $((holder + 1)) >/dev/null
expect step0 nvidia8 "$NO_DRIVER" "a second grant, step_0"
expect step1 nvidia8 "$NO_DRIVER" "a second grant, step_1"

# Slurm's task-level program (attached with no flag) is replaced the same way.
"$tool" slurm-like "$cg/step_0/user/task_0" none 6 7 8
expect step0 nvidia8 "$DENIED" "a task-level program of Slurm's, before re-admission"
grants readmit "$node" "$uid" "$job" "$tmp/agent" >/dev/null
programs "$cg/step_0/user/task_0" vgpu_grants
expect step0 nvidia8 "$NO_DRIVER" "the task after the re-admission"

grants drop "$node" "$uid" "$job" "$tmp/gres.conf" 1 "$tmp/agent" "$holder" | tee "$tmp/out"
grep -q "(4 device programs)" "$tmp/out" || fail "the drop did not reach the job's four programs"
expect step0 nvidia7 "$DENIED" "after the epilog's drop"
expect step1 nvidia7 "$DENIED" "after the epilog's drop"
expect step0 nvidia8 "$NO_DRIVER" "the other grant stays"
expect step0 nvidia6 "$NO_DRIVER" "the job's own GPU is untouched"
expect step1 null opened "Slurm's default verdict, kept"
grants readmit "$node" "$uid" "$job" "$tmp/agent" | grep -q "readmitted 1 granted device" \
    || fail "a dropped grant's record is still read"
expect step1 nvidia7 "$DENIED" "a dropped grant is not readmitted"

# A program attached with BPF_F_ALLOW_MULTI (not Slurm's way; other tools attach so) is replaced in
# its own place, with BPF_F_REPLACE.
multi=$scope/job_$((job + 3))
mkdir -p "$multi/step_0"
"$tool" slurm-like "$multi" multi 6 7 8
prober_start multi "$multi/step_0" || fail "no probe process in job $((job + 3))"
expect multi nvidia7 "$DENIED" "a job whose program allows others beside it, before the grant"
grants admit "$node" "$uid" $((job + 3)) "$tmp/gres.conf" 1 | grep -q "(1 device programs)" \
    || fail "the multi-mode program was not replaced"
"$tool" programs "$multi" | grep -qx vgpu_grants || fail "no vgpu_grants program in job $((job + 3))"
[ "$("$tool" programs "$multi" | wc -l)" -eq 1 ] || fail "the multi-mode program was added to, not replaced"
expect multi nvidia7 "$NO_DRIVER" "that job after the admission"
expect multi nvidia8 "$DENIED" "that job's other verdicts kept"

# Jobs with nothing to admit into: no cgroup (ended), or cgroups without device programs
# (ConstrainDevices=no): said so, nothing written.
if grants admit "$node" "$uid" $((job + 1)) "$tmp/gres.conf" 1 >"$tmp/out" 2>&1; then
    fail "admitted into a job without a cgroup"
fi
grep -q "has no devices cgroup: its devices are not constrained" "$tmp/out" || fail "unexpected: $(cat "$tmp/out")"
mkdir -p "$scope/job_$((job + 2))/step_0/user"
grants admit "$node" "$uid" $((job + 2)) "$tmp/gres.conf" 1 | tee "$tmp/out"
grep -q "no device program: its devices are not constrained, nothing to admit" "$tmp/out" \
    || fail "unexpected: $(cat "$tmp/out")"
say "PASS (the cgroups are removed on exit)"
