#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): the tracker assembles a vgpu job from scattered
# idle GPUs. Every node has one idle GPU; `sbatch --gres=vgpu:3` starts within seconds on one node
# with its local GPU and two GPUs borrowed from the other nodes through holder jobs, whose workers
# (emulated GPUs) the job's workload uses; every vGPU's results are checked. At the job's end every
# holder is gone. Prints the start delay. $1: where to write the delay (seconds), optional.
set -euo pipefail
source "$(dirname "$0")/common.sh"
delay_file=${1:-}

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
fill_leaving_one_idle_gpu
# The workload checks its results on every vGPU (1 local on the CPU emulation, 2 remote on the
# lenders' emulated workers); VGPU_* and CUDA_VISIBLE_DEVICES come from the SPANK bridge. It holds its
# vGPUs 10 s after its checks, so that it still runs while squeue, vgpu report and /metrics are read
# (without, the job could end first on an idle machine: the report then had no assembly).
submitted=$SECONDS
job=$(submit --gres=vgpu:3 -J borrow-3-vgpus --wrap "$(vgpu_job_script --hold 10)")
expect_state "$job" RUNNING 60
delay=$((SECONDS - submitted))
say "job $job started ${delay}s after submission"
[ -z "$delay_file" ] || echo "$delay" >"$delay_file"
mapfile -t holders < <(holders_of "$job")
[ "${#holders[@]}" -eq 2 ] || die "job $job runs with ${#holders[@]} holder job(s), expected 2: $(slurm squeue -p vgpu-lend)"
say "squeue shows job $job's holders:"
slurm squeue -p vgpu-lend -o '%.6i %.9P %.22j %.8T %.6D %R %b' | sed 's/^/testbed:   /'
node=$(job_field "$job" NodeList)
report=$("$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf")
grep -Eq "^$job +root +$node +3 +1 +1=n[0-9]:[0-9]\(holder [0-9]+\) 2=n[0-9]:[0-9]\(holder [0-9]+\) +released" <<<"$report" \
    || die "vgpu report does not show job $job's assembly: $report"
# The JSON report carries the same facts: both borrowed GPUs with their lenders' GPUs and holders, the
# job's own GPU index; and Prometheus' /metrics counts the two borrowed GPUs.
"$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" --format json >"$TESTBED_DIR/out/report-$job.json"
python3 - "$TESTBED_DIR/out/report-$job.json" "$job" <<'CHECK' || die "vgpu report --format json: $(cat "$TESTBED_DIR/out/report-$job.json")"
import json, sys
report = json.load(open(sys.argv[1]))
job = int(sys.argv[2])
assert report["schema_version"] == 1, report["schema_version"]
lends = [lend for lend in report["borrowed"] if lend["job"] == job]
assert len(lends) == 2, lends
assert all(lend["lender_gpu"] is not None and lend["holder"] and len(lend["local_gpus"]) == 1 for lend in lends), lends
assert report["generated_at"].endswith("Z"), report["generated_at"]
CHECK
metrics=$(scrape_metrics) || die "the tracker serves no /metrics on port $(metrics_port)"
grep -qx 'vgpu_borrowed_gpus 2.0' <<<"$metrics" || die "/metrics does not count 2 borrowed GPUs: $metrics"
say "/metrics while job $job runs: $(grep -E '^vgpu_(borrowed_gpus|held_jobs|idle_gpus|live_assemblies|assemblies_total)' <<<"$metrics" | tr '\n' ' ')"
expect_state "$job" COMPLETED 120
output=$TESTBED_DIR/out/$job.out
check_vgpu_job_output "$output" "$node" 1 2
wait_until 30 "job $job's holders are gone" no_holders_of "$job" \
    || die "holders of job $job still in squeue after it ended: $(holders_of "$job" | tr '\n' ' ')"
wait_until 10 "the tracker has forgotten job $job" tracker_forgot "$job" \
    || die "the tracker still reports job $job: $(tracker_request status)"
pass "tracker-borrow: vgpu:3 job $job started after ${delay}s on $node with 1 local and 2 borrowed GPUs" \
    "(holders ${holders[*]}), checked its results on all 3 vGPUs, and left no holder behind:" \
    "$(grep -m 1 '^PASS:' "$output")"
