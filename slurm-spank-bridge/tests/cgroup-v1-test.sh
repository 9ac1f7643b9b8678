#!/usr/bin/env bash
# The bridge's grant admission on a REAL cgroup v1 devices controller (root): a cgroup laid out as
# Slurm's task/cgroup makes one (<devices>/slurm_<node>/uid_<uid>/job_<id>/step_0, devices denied
# but for a few, as ConstrainDevices=yes does) holds a process; it cannot open a GPU device file
# (mknod c 195 N) until the prolog's code admits the GPU, and cannot after the epilog's code drops
# it. The node has no NVIDIA driver, so an admitted c 195:N opens as far as the driver ("No such
# device or address") instead of being refused by the cgroup ("Operation not permitted"); a stand-in
# GPU with a driver behind it (c 1:7, /dev/full's numbers) shows a full open. Cleans up after itself.
# Usage: tests/cgroup-v1-test.sh GRANT_TOOL (make cgroup-test builds it and runs this).
set -euo pipefail
tool=$1
[ "$(id -u)" -eq 0 ] || { echo "cgroup-v1-test: SKIPPED: needs root"; exit 0; }
mount=$("$tool" mount 2>/dev/null) || { echo "cgroup-v1-test: SKIPPED: no cgroup v1 devices controller here"; exit 0; }
[ -w "$mount" ] || { echo "cgroup-v1-test: SKIPPED: $mount is not writable"; exit 0; }

node=cgtest$$
uid=4242
job=$((4000000000 + $$ % 100000))
top=$mount/slurm_$node
cg=$top/uid_$uid/job_$job
tmp=$(mktemp -d /tmp/vgpu-cgroup-test.XXXXXX)
# shellcheck source=tests/cgroup-prober.sh
. "$(dirname "$0")/cgroup-prober.sh"
cleanup() {
    local status=$? dir
    prober_stop_all
    # a cgroup goes once its processes have: children first
    for dir in "$cg/step_0" "$cg" "$top/uid_$uid" "$top"; do
        if [ -d "$dir" ] && ! rmdir "$dir"; then
            echo "cgroup-v1-test: could not remove $dir" >&2
            status=1
        fi
    done
    rm -rf "$tmp"
    exit "$status"
}
trap cleanup EXIT
fail() {
    echo "cgroup-v1-test: FAIL: $*" >&2
    exit 1
}

mkdir -p "$tmp/dev"
mknod "$tmp/dev/nvidia6" c 195 6   # the job's own GPU
mknod "$tmp/dev/nvidia7" c 195 7   # the freed GPU the tracker grants
mknod "$tmp/dev/full0" c 1 7       # a stand-in GPU with a driver behind it
cat >"$tmp/gres.conf" <<GRES
NodeName=$node Name=gpu File=$tmp/dev/nvidia[6-7],$tmp/dev/full0
NodeName=other Name=gpu File=$tmp/dev/nvidia[0-3]
GRES

mkdir -p "$cg"
# As Slurm's task/cgroup does with ConstrainDevices=yes: deny all, allow what the job may use.
echo a >"$cg/devices.deny"
for rule in "c 1:3 rwm" "c 1:5 rwm" "c 1:8 rwm" "c 1:9 rwm" "c 5:0 rwm" "c 5:2 rwm" "c 136:* rwm" "c 195:6 rwm"; do
    echo "$rule" >"$cg/devices.allow"
done
mkdir "$cg/step_0"   # the step: it copies the job's list now and keeps its own from here on

prober_start step0 "$cg/step_0" || fail "no probe process in $cg/step_0"
prober=$prober_pid_step0
expect() {
    local file=$1 want=$2 got
    got=$(probe step0 "$tmp/dev/$file")
    echo "cgroup-v1-test: $3: open $file in step_0 (pid $prober): $got"
    [ "$got" = "$want" ] || fail "open $file: got '$got', expected '$want'"
}
echo "cgroup-v1-test: job cgroup $cg, step cgroup step_0 holds pid $prober"

DENIED="Operation not permitted"
NO_DRIVER="No such device or address"
expect nvidia6 "$NO_DRIVER" "the job's own GPU (allowed like Slurm does)"
expect nvidia7 "$DENIED" "before the grant"
expect full0 "$DENIED" "before the grant"

"$tool" admit "$node" "$uid" "$job" "$tmp/gres.conf" 1
grep -qx "c 195:7 rw" "$cg/step_0/devices.list" || fail "step_0's devices.list lacks c 195:7: $(cat "$cg/step_0/devices.list")"
expect nvidia7 "$NO_DRIVER" "after the prolog's admission (the cgroup lets it through to the absent driver)"
expect full0 "$DENIED" "another GPU stays refused"
"$tool" admit "$node" "$uid" "$job" "$tmp/gres.conf" 2
expect full0 "opened" "after its admission"

"$tool" drop "$node" "$uid" "$job" "$tmp/gres.conf" 1
"$tool" drop "$node" "$uid" "$job" "$tmp/gres.conf" 2
expect nvidia7 "$DENIED" "after the epilog's drop"
expect full0 "$DENIED" "after the epilog's drop"
expect nvidia6 "$NO_DRIVER" "the job's own GPU is untouched"
# a job that is not there: refused, nothing written
if "$tool" admit "$node" "$uid" $((job + 1)) "$tmp/gres.conf" 1 2>"$tmp/err"; then fail "admitted into a job without a cgroup"; fi
grep -q "has no devices cgroup" "$tmp/err" || fail "unexpected message: $(cat "$tmp/err")"
echo "cgroup-v1-test: PASS (the cgroup is removed on exit)"
