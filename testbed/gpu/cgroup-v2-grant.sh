#!/usr/bin/env bash
# The SPANK bridge's cgroup v2 grant admission with a REAL GPU. Run as root on a GPU
# machine with pure cgroup v2, from the repository root; gcc and make, no Java, no CUDA toolkit (libcuda
# is loaded with dlopen):
#
#     bash testbed/gpu/cgroup-v2-grant.sh
#
# Cgroups laid out as Slurm's cgroup/v2 plugin makes them (<cgroup2>/vgpu-gputest-PID/system.slice/
# slurmstepd.scope/job_J/step_S/user/task_0) get a device program of Slurm's shape at the job and at each
# step's user cgroup (BPF_F_ALLOW_OVERRIDE): the GPUs' device files (/dev/nvidiaN) denied, everything
# else (nvidiactl, nvidia-uvm, ...) left to the default "allow", as Slurm does for a job that holds no
# local GPU. A process in step 0 is refused GPU 0, then the bridge's grant code (the prolog's, through
# slurm-spank-bridge/tests/grant_tool) admits it, and the SAME process opens it and makes a CUDA context
# on it; a step started after the grant gets it from the grant records (the tasks' re-admission); after
# the epilog's drop the GPU is refused again. One PASS or FAIL line per check, a summary at the end; exit
# status 0 only when every check passed. Cleans up after itself.
set -uo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2
say() { echo "cgroup-v2-grant: $*"; }
[ "$(id -u)" -eq 0 ] || { say "FAIL: run as root"; exit 2; }
[ -c /dev/nvidia0 ] || { say "FAIL: no /dev/nvidia0 here"; exit 2; }

work=$(mktemp -d /tmp/vgpu-cgroup-v2-grant.XXXXXX)
# The CUDA check runs as a prober (slurm-spank-bridge/tests/cgroup-prober.sh): one line asked, one answered.
tmp=$work
# shellcheck source=slurm-spank-bridge/tests/cgroup-prober.sh
. slurm-spank-bridge/tests/cgroup-prober.sh
make -s -C slurm-spank-bridge build/grant_tool >"$work/build.log" 2>&1 \
    || { cat "$work/build.log"; say "FAIL: building grant_tool"; exit 2; }
tool=$top/slurm-spank-bridge/build/grant_tool
gcc -O1 -Wall -o "$work/check" testbed/gpu/cgroup-cuda-check.c -ldl || { say "FAIL: building the CUDA check"; exit 2; }
unified=$("$tool" cgroup2) || { say "FAIL: no cgroup2 file system mounted"; exit 2; }
if "$tool" mount >/dev/null 2>&1; then
    say "note: a cgroup v1 devices controller is mounted too (hybrid host): it must not refuse the GPU"
fi

node=gputest$$
uid=0
job=$((4000000000 + $$ % 100000))
holder=$((job + 7))
root=$unified/vgpu-gputest-$$
cg=$root/system.slice/slurmstepd.scope/job_$job
failures=0
checks=0
cleanup() {
    prober_stop_all
    if [ -d "$root" ] && ! find "$root" -depth -type d -exec rmdir {} +; then
        say "could not remove $root"
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# Every GPU device file of the node: Slurm denies those the job does not hold (here: all of them).
gpu_minors=()
for file in /dev/nvidia[0-9]*; do
    gpu_minors+=("$(( 0x$(stat -c %T "$file") ))")
done
minor=$(( 0x$(stat -c %T /dev/nvidia0) ))
say "GPU device files: ${gpu_minors[*]/#/c 195:}; granting /dev/nvidia0 (c 195:$minor)"
mkdir -p "$work/agent" && chmod 0700 "$work/agent"
echo "NodeName=$node Name=gpu File=/dev/nvidia0" >"$work/gres.conf"
grants() { "$tool" --cgroup2 "$root" "$@"; }

start_check() { prober_start "$1" "$2" "$work/check" || { say "FAIL: no check process in $2"; exit 1; }; }
ask() { probe "$1" "$2"; }
check() {
    local what=$1 got=$2 want=$3
    checks=$((checks + 1))
    if [[ "$got" == *"$want"* ]]; then
        say "PASS: $what: $got"
    else
        say "FAIL: $what: $got (expected: $want)"
        failures=$((failures + 1))
    fi
}

mkdir -p "$cg/step_0/user/task_0"
"$tool" slurm-like "$cg" override 250 "${gpu_minors[@]}" || { say "FAIL: attaching a device program"; exit 1; }
"$tool" slurm-like "$cg/step_0/user" override 250 "${gpu_minors[@]}" || exit 1
start_check step0 "$cg/step_0/user/task_0"

check "step 0 before the grant: open /dev/nvidia0" "$(ask step0 "open /dev/nvidia0")" "Operation not permitted"
check "step 0 before the grant: open /dev/nvidiactl (Slurm's default verdict)" "$(ask step0 "open /dev/nvidiactl")" "opened"
check "step 0 before the grant: cuInit fails" "$(ask step0 init)" "cuInit CUDA_ERROR_NO_DEVICE"

out=$(grants admit "$node" "$uid" "$job" "$work/gres.conf" 0 "$work/agent" "$holder" 2>&1)
check "the prolog's admission" "$out" "admitted GPU 0 (/dev/nvidia0, c 195:$minor)"
check "step 0, same process, after the grant: open /dev/nvidia0" "$(ask step0 "open /dev/nvidia0")" "opened"
check "step 0, same process, after the grant: a CUDA context and 1 MiB on GPU 0" "$(ask step0 context)" \
    "cuCtxCreate CUDA_SUCCESS cuMemAlloc CUDA_SUCCESS"

mkdir -p "$cg/step_1/user/task_0"
"$tool" slurm-like "$cg/step_1/user" override 250 "${gpu_minors[@]}" || exit 1
start_check step1 "$cg/step_1/user/task_0"
check "step 1 (started after the grant), before its re-admission: open /dev/nvidia0" \
    "$(ask step1 "open /dev/nvidia0")" "Operation not permitted"
out=$(grants readmit "$node" "$uid" "$job" "$work/agent" 2>&1)
check "step 1's re-admission from the grant records" "$out" "readmitted 1 granted device"
check "step 1 after its re-admission: a CUDA context and 1 MiB on GPU 0" "$(ask step1 context)" \
    "cuCtxCreate CUDA_SUCCESS cuMemAlloc CUDA_SUCCESS"

out=$(grants drop "$node" "$uid" "$job" "$work/gres.conf" 0 "$work/agent" "$holder" 2>&1)
check "the epilog's drop" "$out" "dropped GPU 0"
check "step 0 after the drop: open /dev/nvidia0" "$(ask step0 "open /dev/nvidia0")" "Operation not permitted"
check "step 1 after the drop: open /dev/nvidia0" "$(ask step1 "open /dev/nvidia0")" "Operation not permitted"
mkdir -p "$cg/step_2/user/task_0"
start_check step2 "$cg/step_2/user/task_0"
check "a fresh process after the drop: cuInit fails" "$(ask step2 init)" "cuInit CUDA_ERROR_NO_DEVICE"

if [ "$failures" -eq 0 ]; then
    say "PASS: all $checks checks"
    exit 0
fi
say "FAIL: $failures of $checks checks failed"
exit 1
