#!/usr/bin/env bash
# Captures what the tracker reads from Slurm, as text and as the JSON of each data_parser version the Slurm offers
# (testbed up first, testbed/slurm/up.sh): a finished job, a job on n1 and n2 with a GPU on each, a job waiting for
# GPUs, a held vgpu job, a vgpu job pinned to n2 with gpu:1,vgpu:2, a holder on n3 and a grant holder on n2, and n3
# drained (into DIR/busy); then n3's slurmd stopped and n3 set down (DIR/down); and the answer to a job Slurm does
# not know (DIR/unknown-job.*). The idle-gpu-tracker test resources slurm-24.11/busy, down and unknown-job were made
# with it: VGPU_TESTBED_SLURM=24.11 testbed/slurm/capture-scontrol.sh DIR. n3's slurmd is started again at the end.
# Usage: capture-scontrol.sh DIR
set -euo pipefail
source "$(dirname "$0")/common.sh"
out=${1:?usage: capture-scontrol.sh DIR}
# The data_parser versions this Slurm lists (scontrol --json=list); none before 23.02.
read -r -a versions <<<"$(slurm scontrol --json=list 2>&1 | sed -n 's|^data_parser/||p' | sort | tr '\n' ' ' || true)"
capture_all() {
    local dir=$out/$1
    mkdir -p "$dir"
    slurm scontrol --version >"$dir/slurm-version.txt"
    slurm scontrol show node -d >"$dir/scontrol-show-node-d.txt"
    slurm scontrol show job -d >"$dir/scontrol-show-job-d.txt"
    for v in "${versions[@]}"; do
        slurm scontrol --json="$v" show node -d >"$dir/scontrol-show-node-d.$v.json"
        slurm scontrol --json="$v" show job -d >"$dir/scontrol-show-job-d.$v.json"
    done
}
# n3's slurmd answers again (stopped by the down phase): it takes back the batch steps it left, which the
# cancel then ends.
restart_n3() {
    if ! ps -eo args= | grep -qx "slurmd -f $SLURM_CONF -N n3"; then
        slurmd -f "$SLURM_CONF" -N n3
        sleep 2
    fi
    slurm scontrol update nodename=n3 state=resume >/dev/null 2>&1 || true
}
jobs=()
trap 'restart_n3; cancel_jobs "${jobs[@]}"' EXIT
done_job=$(submit -J finishes --wrap 'true'); jobs+=("$done_job")
two=$(submit -N 2 -w n1,n2 --gres=gpu:1 -J two-nodes --wrap 'sleep 600'); jobs+=("$two")
fill=$(submit -w n1 --gres=gpu:2 -c 2 -J fill-n1 --wrap 'sleep 600'); jobs+=("$fill")
expect_state "$two" RUNNING 30
expect_state "$fill" RUNNING 30
waiting=$(submit -w n1 --gres=gpu:4 -J waits-for-gpus --wrap 'sleep 600'); jobs+=("$waiting")
held=$(submit --gres=vgpu:3 -J wants-3-vgpus --wrap 'sleep 600'); jobs+=("$held")
assembled=$(submit --gres=vgpu:2 -J assembled-2-vgpus --wrap 'sleep 600'); jobs+=("$assembled")
holder=$(submit -p vgpu-lend --gres=gpu:1 -w n3 -c 1 -J "vgpu-holder-$assembled-v1" --wrap 'sleep 600'); jobs+=("$holder")
expect_state "$holder" RUNNING 30
slurm scontrol update JobId="$assembled" Gres=gpu:1,vgpu:2 NodeList=n2
slurm scontrol release "$assembled"
expect_state "$assembled" RUNNING 30
grant=$(submit -p vgpu-lend --gres=gpu:1 -w n2 -c 1 -J "vgpu-grant-$assembled-v2" --wrap 'sleep 600'); jobs+=("$grant")
expect_state "$grant" RUNNING 30
wait_until 30 "job $done_job ended" job_has_ended "$done_job"
slurm scontrol update nodename=n3 state=drain reason="json capture: drained"
sleep 2
capture_all busy
# n3's slurmd stops answering (ReturnToService=2 would bring a DOWN node back as soon as it registers).
kill "$(ps -eo pid=,args= | awk -v conf="$SLURM_CONF" '$2 == "slurmd" && $4 == conf && $6 == "n3" {print $1}')"
slurm scontrol update nodename=n3 state=down reason="json capture: down"
sleep 1
slurm scontrol show node n3 | grep -q "State=DOWN" || die "n3 is not DOWN"
capture_all down
# A job Slurm does not know: each JSON (its exit status is 0), and the text with its exit status.
mkdir -p "$out/unknown-job"
for v in "${versions[@]}"; do
    slurm scontrol --json="$v" show job -d 999999 >"$out/unknown-job/scontrol-show-job-d-999999.$v.json"
done
{ slurm scontrol show job -d 999999; echo "exit $?"; } >"$out/unknown-job/scontrol-show-job-d-999999.txt" 2>&1 || true
echo "jobs: done=$done_job two=$two fill=$fill waiting=$waiting held=$held assembled=$assembled holder=$holder grant=$grant"
