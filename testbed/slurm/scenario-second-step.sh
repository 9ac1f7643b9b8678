#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): later job steps open the borrowed vGPUs again. A vgpu:3
# batch job runs `vgpu run` three times: the batch step, then two `srun` steps, for each of which the SPANK
# bridge asks the tracker for the assembly again (fresh session tokens, the same workers). Steps 1 and 2 pass
# on 1 local + 2 borrowed vGPUs served by the same holders' workers. During step 2 an admin moves vGPU 2 home
# (`vgpu migrate JOB 2`, the hook paused), so vGPU 1 stays borrowed before a vGPU that is home: step 3 gets
# local=<own GPU>,<granted GPU> remote=1@<same worker> and passes on 2 local + 1 borrowed vGPUs.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
config=$TESTBED_DIR/etc/vgpu.conf
"$VGPU" hook pause --config "$config"
fill_leaving_one_idle_gpu
run="$VGPU run --local-backend emulated"
step() { # step N VGPU-RUN-ARGS: an srun step that prints the assembly the bridge gave it, then runs vgpu run
    printf "srun -n1 bash -c 'echo \"STEP %s VGPU_ASSEMBLY=\$VGPU_ASSEMBLY\"; exec %s %s'\n" "$1" "$run" "$2"
}
script=$(printf '%s\n' 'echo "STEP 1 VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' "$run" "$(step 2 '--hold 25')" "$(step 3 '')")
job=$(submit --gres=vgpu:3 -J second-step --wrap "$script")
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
mapfile -t lenders < <(holders_of "$job")
[ "${#lenders[@]}" -eq 2 ] || die "job $job has ${#lenders[@]} holders, expected 2"
say "job $job runs on $node, borrowing through holders ${lenders[*]}"
output=$TESTBED_DIR/out/$job.out
holding() { grep -q '^holding the vGPUs' "$output"; }
wait_until 90 "step 2 of job $job holds its vGPUs" holding || die "step 2 did not start its hold: $(cat "$output")"
[ "$(holders_of "$job" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${lenders[@]}" | sort | tr '\n' ' ')" ] \
    || die "the lenders' holders changed between steps: $(holders_of "$job" | tr '\n' ' '), were ${lenders[*]}"
filler=
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then filler=$fill; fi
done
slurm scancel "$filler"
wait_until 30 "filler $filler has ended" job_has_ended "$filler" || die "filler $filler did not end"
moved=$(migrate_home "$config" "$job" 2)
say "vgpu migrate $job 2: $moved"
expect_state "$job" COMPLETED 120
for k in 1 2 3; do say "  $(grep "^STEP $k " "$output")"; done
assembly_of() { sed -n "s/^STEP $1 VGPU_ASSEMBLY=//p" "$output"; }
[ "$(grep -c '^STEP ' "$output")" -eq 3 ] || die "not 3 steps ran: $(cat "$output")"
[ "$(assembly_of 1)" = "$(assembly_of 2)" ] || die "step 2's assembly $(assembly_of 2) differs from step 1's $(assembly_of 1)"
remote1=$(tr ',' '\n' <<<"$(assembly_of 1)" | sed -n 's/^1=//p')
own=$(tr ',' '\n' <<<"$(assembly_of 1)" | sed -n 's/^0=//p')
grant_gpu=$(tr ',' '\n' <<<"$(assembly_of 3)" | sed -n 's/^2=local://p')
[ -n "$grant_gpu" ] || die "step 3's vGPU 2 is not local: $(assembly_of 3)"
[ "$(assembly_of 3)" = "0=$own,1=$remote1,2=local:$grant_gpu" ] \
    || die "step 3's assembly $(assembly_of 3) is not vGPU 0 $own, vGPU 1 $remote1 (the same worker), vGPU 2 home"
mapfile -t passes < <(grep -E '^(PASS|FAIL): ' "$output")
expected=("PASS: 3 of 3 vGPUs (1 local, 2 remote)" "PASS: 3 of 3 vGPUs (1 local, 2 remote)"
    "PASS: 3 of 3 vGPUs (2 local, 1 remote)" "PASS: 3 of 3 vGPUs (2 local, 1 remote)")
[ "${#passes[@]}" -eq 4 ] || die "expected 4 summaries (step 1, step 2 before and after its hold, step 3): ${passes[*]}"
for i in 0 1 2 3; do
    [[ "${passes[$i]}" == "${expected[$i]}"* ]] || die "summary $((i + 1)) is '${passes[$i]}', expected '${expected[$i]}'"
done
grep -q '^FAIL' "$output" && die "a check failed: $(grep '^FAIL' "$output")"
assemblies=$(grep -c "job $job on $node gets its assembly" "$TESTBED_DIR/log/tracker.log")
[ "$assemblies" -eq 3 ] || die "the tracker answered $assemblies assembly requests for job $job, expected one per step"
pass "second-step: job $job's three steps each got the assembly anew and passed on all 3 vGPUs, the same lenders'" \
    "workers serving steps 1 and 2; after vGPU 2 moved home behind the borrowed vGPU 1, step 3 got local GPUs" \
    "${own#local:},$grant_gpu and vGPU 1 from the same worker"
