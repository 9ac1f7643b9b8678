#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): MUNGE authentication between the SPANK bridge
# and the tracker, as the rendered files set it up. With a munged of the testbed's own, the testbed's
# configuration with auth = munge (the default the testbed turns off) and that munged's socket, its
# rendered plugstack.conf loaded and the tracker started with its rendered unit's authentication
# options, a vgpu job gets its assembly and completes; a forged credential, a
# replayed one, one made for another request, one from a user who does not own the job, and a
# request without one are each refused with the reason. plugstack.conf is restored at the end.
set -euo pipefail
source "$(dirname "$0")/common.sh"

command -v munged >/dev/null && command -v unmunge >/dev/null && id munge >/dev/null 2>&1 \
    || die "munged, munge and unmunge and the munge user are needed (apt-get install munge)"
munge_dir=$TESTBED_DIR/etc/munge
socket=$munge_dir/sock/munge.socket
plugstack=$TESTBED_DIR/etc/plugstack.conf
job=
restore() {
    set +e
    [ -z "$job" ] || cancel_jobs "$job"
    stop_tracker
    [ -f "$plugstack.auth-none" ] && mv "$plugstack.auth-none" "$plugstack"
    [ -s "$munge_dir/sock/munged.pid" ] && kill "$(cat "$munge_dir/sock/munged.pid")"
}
trap restore EXIT

start_munged "$munge_dir" || die "munged did not start"

# The testbed's configuration as a site's: MUNGE on (the default), with the testbed's munged.
config=$TESTBED_DIR/etc/vgpu-munge.conf
sed -e '/^auth = none$/d' -e "s|^slurm_user = root\$|slurm_user = root\nmunge_socket = $socket|" \
    "$TESTBED_DIR/etc/vgpu.conf" >"$config"
"$VGPU" config check "$config" >/dev/null || die "the testbed's configuration with MUNGE is invalid"
cp "$plugstack" "$plugstack.auth-none"
"$VGPU" config render --what plugstack.conf "$config" >"$plugstack"
grep -q "^required .* auth=munge munge_socket=$socket\$" "$plugstack" \
    || die "the rendered plugstack.conf has no auth=munge: $(grep '^required' "$plugstack")"
# The tracker's authentication options, as its rendered unit starts it (ExecStart's words after --holder-output's).
read -r -a auth <<<"$("$VGPU" config render --what vgpu-tracker.service "$config" \
    | sed -n 's/^ExecStart=.* --holder-output [^ ]* //p')"
[ "${auth[*]}" = "--auth munge --trusted-user root --munge-socket $socket" ] \
    || die "the rendered tracker unit starts the tracker with '${auth[*]}', not MUNGE with the testbed's socket"
say "rendered: $(grep '^required' "$plugstack" | sed 's/.* auth=/auth=/'); the tracker's ${auth[*]}"
log_lines=0
[ ! -f "$TESTBED_DIR/log/tracker.log" ] || log_lines=$(wc -l <"$TESTBED_DIR/log/tracker.log")
start_tracker_with --config "$config" "${auth[@]}"

job=$(submit --gres=vgpu:2 -J munge-2-vgpus --wrap "$(vgpu_job_script)")
expect_state "$job" COMPLETED 90
check_vgpu_job_output "$TESTBED_DIR/out/$job.out" "$(job_field "$job" NodeList)" 2 0
say "job $job got its assembly over auth=munge and completed"

# expect_refusal DESCRIPTION EXPECTED REQUEST: the tracker answers REQUEST with an error containing EXPECTED.
expect_refusal() {
    local reply
    reply=$(tracker_request "$3")
    [[ "$reply" == error\ * && "$reply" == *"$2"* ]] || die "$1: the tracker answered '$reply', expected '$2'"
    say "  $1 -> $reply"
}
credential() {
    munge --socket="$socket" --string="$1"
}
expect_refusal "no credential" "a MUNGE credential is required" "assembly $job n1"
expect_refusal "a forged credential" "MUNGE refused the credential" "assembly $job n1 munge=MUNGE:AwQFAAB0aGlzIGlzIG5vdCBhIGNyZWRlbnRpYWw=:"
one=$(credential "assembly 999999 n1")
expect_refusal "a good credential for an unknown job" "job 999999 has no vGPU assembly" "assembly 999999 n1 munge=$one"
expect_refusal "the same credential replayed" "MUNGE refused the credential" "assembly 999999 n1 munge=$one"
expect_refusal "a credential made for another request" "made for another request" "assembly 999998 n1 munge=$(credential "assembly 999997 n1")"
stranger=$(su -s /bin/sh nobody -c "munge --socket=$socket --string='done $job n1 0'")
expect_refusal "another user's done for root's job" "user nobody" "done $job n1 0 munge=$stranger"
grep -q "refused 'assembly $job n1'" <(tail -n +"$((log_lines + 1))" "$TESTBED_DIR/log/tracker.log") \
    || die "the tracker's log does not show the refusals"
pass "tracker-munge: job $job assembled over the rendered auth=munge; missing, forged, replayed, mismatched and foreign credentials refused"
