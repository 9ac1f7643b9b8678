#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): bad input to the migration hook, each refused in vgpu's
# words with a non-zero exit, nothing lost: the ledger, the holders and the running job stay as they were.
# - a malformed [policy] (bad migration keys): `vgpu config check` names every error at once, and
#   `vgpu tracker` refuses to start with it, saying why;
# - `vgpu migrate` of an unknown job, of a job that is no vgpu job, of an unknown vGPU, to an unknown node,
#   with an index that is no number (hook-grant tries others);
# - forged agent reports on the tracker's socket (`agent poll` / `agent done` with another job's token or
#   a made-up one): one error line each;
# - an agent that vanished: the job's `vgpu run` is killed while the batch script goes on; `vgpu migrate
#   JOB 1` then ends at once with exit 1 saying the agent stopped polling, and the vGPU stays borrowed.
set -euo pipefail
source "$(dirname "$0")/common.sh"

config=$TESTBED_DIR/etc/vgpu.conf
# expect_refused DESCRIPTION EXPECTED STATUS COMMAND...: COMMAND exits STATUS and prints EXPECTED.
expect_refused() {
    local description=$1 expected=$2 want=$3 output status=0
    shift 3
    output=$(timeout 30 "$@" 2>&1) || status=$?
    [ "$status" -eq "$want" ] || die "$description: exit status $status, expected $want: $output"
    grep -qF -- "$expected" <<<"$output" || die "$description: no '$expected' in: $output"
    say "  $description (exit $status): $(grep -F -- "$expected" <<<"$output" | head -n 1 | cut -c1-220)"
}

# 1. a malformed hook policy
broken=$TESTBED_DIR/etc/vgpu-bad-policy.conf
sed 's/^\[policy\]$/[policy]\nmigrate_home = sometimes\nmigration_cooldown = -5m\nmigration_end_guard = soon\nmem_sync_bandwidth = 0\nreplay_cost = fast/' \
    "$config" >"$broken"
output=$("$VGPU" config check "$broken" 2>&1) && die "vgpu config check accepted a malformed [policy]: $output"
for key in migrate_home migration_cooldown migration_end_guard mem_sync_bandwidth replay_cost; do
    grep -q "$broken:[0-9]*: $key" <<<"$output" || die "vgpu config check does not name $key: $output"
done
say "  vgpu config check of a malformed [policy] (every error at once):"
grep -E "$broken:[0-9]+: " <<<"$output" | sed 's/^/testbed:     /'
expect_refused "vgpu tracker with a malformed [policy]" "$broken:" 1 \
    "$VGPU" tracker --config "$broken" --ledger "$TESTBED_DIR/state/bad-policy.ledger"
[ ! -s "$TESTBED_DIR/state/bad-policy.ledger" ] || die "a tracker that refused to start wrote a ledger"

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
"$VGPU" hook pause --config "$config"
fill_leaving_one_idle_gpu
# The app runs in the background so the script goes on after it is killed: the job outlives its agent.
# vgpu run logs warnings and errors only; at INFO its agent says when it polls the tracker, which step 1 waits for.
job=$(submit --gres=vgpu:3 -J hook-bad-input --wrap "export JAVA_TOOL_OPTIONS=-Dorg.slf4j.simpleLogger.defaultLogLevel=info
$(vgpu_job_script --hold 300) & app=\$!
echo \"app \$app\"; wait \$app; echo \"app ended: \$?\"; sleep 300")
expect_state "$job" RUNNING 60
node=$(job_field "$job" NodeList)
mapfile -t lenders < <(holders_of "$job")
[ "${#lenders[@]}" -eq 2 ] || die "job $job has ${#lenders[@]} holders, expected 2"
filler=
for fill in "${FILL_JOBS[@]}"; do
    if [ "$(job_field "$fill" NodeList)" = "$node" ]; then filler=$fill; fi
done
slurm scancel "$filler"
wait_until 30 "filler $filler has ended" job_has_ended "$filler" || die "filler $filler did not end"
output=$TESTBED_DIR/out/$job.out
polling() { grep -q "polling the tracker at" "$output"; }
wait_until 60 "job $job's agent polls the tracker" polling || die "no agent: $(cat "$output")"
ledger=$TESTBED_DIR/state/tracker.ledger
snapshot() { printf '%s\n%s\n%s\n' "$(md5sum <"$ledger")" "$(holders_of "$job" | sort | tr '\n' ' ')" \
    "$(tracker_request status | grep "^assembly job=$job " | grep -o ' lend=[^ ]*' | tr -d '\n')"; }
before=$(snapshot)

# 2. vgpu migrate with what names nothing
other=${FILL_JOBS[0]}
[ "$other" != "$filler" ] || other=${FILL_JOBS[1]}
expect_refused "vgpu migrate of an unknown job" "job 4000000 has no running vGPU assembly" 1 \
    "$VGPU" migrate --config "$config" 4000000 1
expect_refused "vgpu migrate of a job that is no vgpu job" "job $other has no running vGPU assembly" 1 \
    "$VGPU" migrate --config "$config" "$other" 1
expect_refused "vgpu migrate of an unknown vGPU" "vGPU 5 of job $job is not borrowed" 1 \
    "$VGPU" migrate --config "$config" "$job" 5
expect_refused "vgpu migrate to an unknown node" "node nosuch cannot lend" 1 \
    "$VGPU" migrate --config "$config" "$job" 1 nosuch
expect_refused "vgpu migrate with a vGPU that is no number" "vgpu must be a vGPU index" 1 \
    "$VGPU" migrate --config "$config" "$job" one

# 3. forged agent reports: one error line each. The job's own token (from its app's environment, as root may
# read it) used for another job, another vGPU or a migration that is not under way; a made-up token.
app=$(sed -n 's/^app //p' "$output")
[ -n "$app" ] || die "no app pid in: $(head -n 3 "$output")"
token=$(tr '\0' '\n' <"/proc/$app/environ" | sed -n 's/^VGPU_REMOTE=1@[^#]*#\([^,]*\).*/\1/p')
[ -n "$token" ] || die "no session token of vGPU 1 in the app's environment"
nonce=00112233445566778899aabbccddeeff
for request in "agent poll $job 1 v1.made.up $nonce" \
    "agent done $job 1 v1.made.up 1 ok 10 100" \
    "agent poll $other 1 $token $nonce" \
    "agent done $job 2 $token 1 failed forged" \
    "agent done $job 1 $token 99 ok 1 1" \
    "agent done 4000000 1 $token 1 ok 1 1"; do
    reply=$(tracker_request "$request")
    [ "$(wc -l <<<"$reply")" -eq 1 ] && [[ "$reply" == error\ * ]] \
        || die "the tracker answered '${request/$token/TOKEN}' with '$reply', expected one error line"
    say "  '$(cut -c1-60 <<<"${request/$token/TOKEN}")' -> ${reply:0:150}"
done
[ "$(snapshot)" = "$before" ] || die "bad input changed something: before $before, after $(snapshot)"

# 4. an agent that vanished: its app is killed while the job runs on
# The background `exec vgpu run` became the app's JVM (the launcher execs java), so $app is the JVM itself.
kill -KILL "$app"
ended() { grep -q "^app ended" "$output"; }
wait_until 30 "job $job's app has ended" ended || die "the app did not end"
say "  the app of job $job was killed ($(grep '^app ended' "$output")); the job runs on: $(job_field "$job" JobState)"
# Its last held poll ends within the agent hold time (20 s); after 10 s more without a poll the agent counts as gone.
sleep 32
started=$SECONDS
expect_refused "vgpu migrate of a job whose agent vanished" "migration agent stopped polling the tracker" 1 \
    "$VGPU" migrate --config "$config" "$job" 1
[ $((SECONDS - started)) -le 10 ] || die "vgpu migrate took $((SECONDS - started)) s to refuse"
job_state_is "$job" RUNNING || die "job $job is $(job_field "$job" JobState)"
[ -z "$(slurm squeue -h -p vgpu-lend -t PENDING,RUNNING,CONFIGURING -o '%j' | grep "^vgpu-grant-$job-v")" ] \
    || die "a grant holder was submitted for the vanished agent: $(slurm squeue -p vgpu-lend)"
[ "$(snapshot)" = "$before" ] || die "the refused move changed something: before $before, after $(snapshot)"
pass "hook-bad-input: a malformed [policy] named key by key and refused by the tracker; vgpu migrate of an unknown" \
    "job, a non-vgpu job, an unknown vGPU and node refused; forged agent reports answered with one error each;" \
    "a vanished agent's move refused at once; job $job's ledger, holders and assembly unchanged"
