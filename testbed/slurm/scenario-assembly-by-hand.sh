#!/usr/bin/env bash
# Scenario: what the tracker will do, done by hand with Slurm's own commands and the lenders' control
# sockets, to prove Slurm 22.05 and the lenders accept each step. Each node has 1 idle GPU, and on
# n2 and n3 user jobs hold every CPU they may (the CPUs MaxCPUsPerNode keeps free let holders start); a held
# vgpu:3 job gets the idle GPU of n1 as its own allocation and the idle GPUs of n2 and n3 through
# holder jobs in the lend partition, the lenders of n2 and n3 open a worker (emulated GPU) on those
# GPUs, the job is pinned to n1 with gpu:1 added, and released. Then every GPU of the cluster is
# allocated in Slurm's books, and the job sees its one local GPU. Captures go to $1 (default
# $TESTBED_DIR/capture/assembled).
set -euo pipefail
source "$(dirname "$0")/common.sh"
capture=${1:-$TESTBED_DIR/capture/assembled}
lend_partition=vgpu-lend

FILL_JOBS=()
jobs=()
trap 'cancel_jobs "${FILL_JOBS[@]}" "${jobs[@]}"' EXIT
fill_leaving_one_idle_gpu
job=$(submit --gres=vgpu:3 -J assembled-3-vgpus --wrap 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"; sleep 600')
jobs+=("$job")
workers=()
holders=()
for lender in n2 n3; do
    last_cpu=$(submit -w "$lender" -c 1 -J "last-user-cpu-$lender" --wrap 'sleep 600')
    jobs+=("$last_cpu")
    expect_state "$last_cpu" RUNNING 30
    holder=$(submit -p "$lend_partition" --gres=gpu:1 -w "$lender" -J "vgpu-holder-$job" --wrap 'sleep 600')
    jobs+=("$holder")
    holders+=("$holder")
    expect_state "$holder" RUNNING 30
    gpu=$(slurm scontrol show job -d "$holder" | sed -n 's/.*GRES=gpu:1(IDX:\([0-9]*\)).*/\1/p')
    [ -n "$gpu" ] || die "holder $holder on $lender shows no GPU index"
    reply=$(lender_request "$lender" "open $gpu") || die "the lender of $lender did not answer 'open $gpu'"
    [[ "$reply" =~ ^ok\ 127\.0\.0\.1:[0-9]+\ [^\ ]+$ ]] || die "the lender of $lender answered 'open $gpu' with '$reply'"
    workers+=("$lender:gpu$gpu=${reply#ok }")
done
slurm scontrol update JobId="$job" Gres=gpu:1,vgpu:3 NodeList=n1
[ "$(job_field "$job" TresPerNode)" = "${TRES_GRES}gpu:1,${TRES_GRES}vgpu:3" ] \
    || die "job $job asks for $(job_field "$job" TresPerNode) after the update, expected ${TRES_GRES}gpu:1,${TRES_GRES}vgpu:3"
[ "$(job_field "$job" JobState)" = PENDING ] || die "job $job is $(job_field "$job" JobState) before its release, expected PENDING"
slurm scontrol release "$job"
expect_state "$job" RUNNING 30
wait_until 10 "job $job has written its GPUs" grep -q '^CUDA_VISIBLE_DEVICES=' "$TESTBED_DIR/out/$job.out" \
    || die "job $job wrote no CUDA_VISIBLE_DEVICES line"
visible=$(sed -n 's/^CUDA_VISIBLE_DEVICES=//p' "$TESTBED_DIR/out/$job.out")
[ "$visible" = $((TESTBED_GPUS_PER_NODE - 1)) ] \
    || die "job $job sees CUDA_VISIBLE_DEVICES=$visible, expected n1's one idle GPU, $((TESTBED_GPUS_PER_NODE - 1))"
for node in "${TESTBED_NODES[@]}"; do
    expect_gres_used "$node" "gpu:$TESTBED_GPUS_PER_NODE,"
done
expect_gres_used n1 "gpu:$TESTBED_GPUS_PER_NODE,vgpu:3"
capture_slurm_views "$capture"
pass "assembly-by-hand: vgpu job $job runs on n1 with CUDA_VISIBLE_DEVICES=$visible, holders ${holders[*]} keep" \
    "the idle GPUs of n2 and n3, served by workers ${workers[*]}; every node has GresUsed=gpu:$TESTBED_GPUS_PER_NODE;" \
    "captured to $capture"
