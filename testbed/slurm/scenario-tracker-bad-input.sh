#!/usr/bin/env bash
# Scenario: the tracker answers bad input clearly and keeps serving: a malformed configuration and a
# lend partition Slurm does not have stop `vgpu tracker` at start with the reason; garbage, malformed
# and unknown requests on its socket each get one error line; a job asking for more vGPUs than the
# cluster can give is refused at submission; `vgpu report` still answers afterwards, and fails clearly
# when pointed at something that is not a tracker.
set -euo pipefail
source "$(dirname "$0")/common.sh"

# expect_exit_1 DESCRIPTION EXPECTED COMMAND...: COMMAND exits 1 and prints EXPECTED.
expect_exit_1() {
    local description=$1 expected=$2 output status=0
    shift 2
    output=$("$@" 2>&1) || status=$?
    [ "$status" -eq 1 ] || die "$description: exit status $status, expected 1: $output"
    grep -qF -- "$expected" <<<"$output" || die "$description: no '$expected' in: $output"
    say "  $description: $(grep -F -- "$expected" <<<"$output" | head -n 1)"
}

broken=$TESTBED_DIR/etc/vgpu-broken.conf
sed 's/^max_borrowed_per_job = .*/max_borrowed_per_job = many/' "$TESTBED_DIR/etc/vgpu.conf" >"$broken"
line=$(grep -n '^max_borrowed_per_job' "$broken" | cut -d ':' -f 1)
expect_exit_1 "tracker with a malformed configuration" "$broken:$line: max_borrowed_per_job" \
    "$VGPU" tracker --config "$broken" --ledger "$TESTBED_DIR/state/bad.ledger"
unknown=$TESTBED_DIR/etc/vgpu-unknown-partition.conf
sed 's/^lend_partition = .*/lend_partition = nosuch/' "$TESTBED_DIR/etc/vgpu.conf" >"$unknown"
expect_exit_1 "tracker with a lend partition Slurm lacks" "Slurm has no partition 'nosuch'" \
    "$VGPU" tracker --config "$unknown" --ledger "$TESTBED_DIR/state/bad.ledger"

trap 'stop_tracker' EXIT
start_tracker
for request in "hello" "assembly" "assembly x n1" "assembly 1 n1;reboot" "done 1 n1 abc" "status please" \
    "worker 1 1 127.0.0.1:1 someone v1.forged.proof" "$(head -c 6000 /dev/zero | tr '\0' 'x')" \
    "$(printf 'assembly \001\002\003')"; do
    reply=$(tracker_request "$request")
    [ "$(wc -l <<<"$reply")" -eq 1 ] && [[ "$reply" == error\ * ]] \
        || die "the tracker answered '${request:0:40}' with '$reply', expected one error line"
    say "  '${request:0:30}' -> ${reply:0:100}"
done
head -c 20000 /dev/urandom >"$TESTBED_DIR/out/garbage.bin"
timeout 10 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"; cat "$2" >&3; exec 3>&-' garbage "$(tracker_port)" "$TESTBED_DIR/out/garbage.bin" || true
reply=$(tracker_request status)
[[ "$(tail -n 1 <<<"$reply")" == ok\ assemblies=* ]] || die "the tracker stopped answering after garbage: '$reply'"
kill -0 "$(cat "$TESTBED_DIR/run/tracker.pid")" || die "the tracker died on garbage"
jobs_before=$(slurm squeue -h | wc -l)
if output=$(slurm sbatch --gres=vgpu:$((TESTBED_VGPUS_PER_NODE + 1)) --wrap true 2>&1); then
    die "a job asking for more vGPUs than the cluster can give was accepted: $output"
fi
grep -q "asks for more than" <<<"$output" || die "the refusal does not say why: $output"
say "  sbatch --gres=vgpu:$((TESTBED_VGPUS_PER_NODE + 1)): $(grep -m 1 'asks for more than' <<<"$output")"
[ "$(slurm squeue -h | wc -l)" -eq "$jobs_before" ] || die "a refused submission left a job behind"
"$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" >/dev/null || die "vgpu report failed after the bad input"
# vgpu report asking what is not a tracker fails, saying so, rather than print an empty report.
expect_exit_1 "vgpu report asking a lender's port" "vgpu tracker" "$VGPU" report --tracker "127.0.0.1:$(lender_port n1)"
expect_exit_1 "vgpu report asking the metrics' HTTP port" "vgpu report: " "$VGPU" report --tracker "127.0.0.1:$(metrics_port)"
pass "tracker-bad-input: malformed configuration and unknown partition refused at start, garbage answered with" \
    "errors while the tracker kept serving, an oversized vgpu request refused at submission"
