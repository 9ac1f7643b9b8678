#!/usr/bin/env bash
# The install scenario's Slurm part (install-scenario.sh runs it on a testbed brought up in the root where the
# .debs were installed, with VGPU=/usr/bin/vgpu): the tracker runs the ExecStart of its installed unit on the
# testbed's configuration, copied to /etc/vgpu/vgpu.conf as an admin would with MUNGE on (the default, which the
# testbed turns off; here with a munged of the scenario's own and its socket, so plugstack.conf is rendered anew
# from /etc/vgpu/vgpu.conf and the unit's --auth munge --trusted-user slurm gets --munge-socket), plus the
# testbed's --worker-backend emulated (its GPUs are fake device files) and --poll 1. A vgpu:3 job starts on 1 local and 2
# borrowed GPUs and runs a Java program (VGPU_INSTALLED_PROGRAMS) under /usr/bin/vgpu run -- java, the Java of
# the root's packages; its holders' output lands in /var/log/vgpu (the unit's --holder-output) and says their workers
# speak TLS (the default); /metrics names the build.
set -euo pipefail
source "$(dirname "$0")/../slurm/common.sh"

[ "$VGPU" = /usr/bin/vgpu ] || die "run by install-scenario.sh, with VGPU=/usr/bin/vgpu (got $VGPU)"
programs=${VGPU_INSTALLED_PROGRAMS:?the compiled job program}
FILL_JOBS=()
job=
tracker=
munge_dir=$TESTBED_DIR/etc/munge
socket=$munge_dir/sock/munge.socket
plugstack=$TESTBED_DIR/etc/plugstack.conf
finish() {
    cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}
    [ -z "$tracker" ] || kill "$tracker" 2>/dev/null || true
    [ ! -f "$plugstack.auth-none" ] || mv "$plugstack.auth-none" "$plugstack"
    [ ! -s "$munge_dir/sock/munged.pid" ] || kill "$(cat "$munge_dir/sock/munged.pid")" 2>/dev/null || true
}
trap finish EXIT

unit=/usr/lib/systemd/system/vgpu-tracker.service
start_munged "$munge_dir" || die "munged did not start (the root's Slurm packages bring munge)"
sed -e '/^auth = none$/d' -e "s|^slurm_user = root\$|munge_socket = $socket|" "$TESTBED_DIR/etc/vgpu.conf" \
    >/etc/vgpu/vgpu.conf
"$VGPU" config check /etc/vgpu/vgpu.conf >/dev/null || die "/etc/vgpu/vgpu.conf with MUNGE is invalid"
cp "$plugstack" "$plugstack.auth-none"
"$VGPU" config render --what plugstack.conf /etc/vgpu/vgpu.conf >"$plugstack"
grep '^required' "$plugstack"
grep -q " auth=munge munge_socket=$socket\$" "$plugstack" || die "the rendered plugstack.conf has no auth=munge"
# systemd's StateDirectory=vgpu, StateDirectoryMode=0700
install -d -m 0700 /var/lib/vgpu
# ExecStart as systemd runs it: %% is a %
read -r -a command <<<"$(sed -n 's/^ExecStart=//p' "$unit" | sed 's/%%/%/g')"
[[ " ${command[*]} " == *" --auth munge --trusted-user slurm "* ]] || die "the installed unit does not turn MUNGE on"
say "the tracker as its unit starts it: ${command[*]} --munge-socket $socket --worker-backend $TESTBED_GPUS --poll 1"
"${command[@]}" --munge-socket "$socket" --worker-backend "$TESTBED_GPUS" --poll 1 </dev/null \
    >"$TESTBED_DIR/log/tracker.log" 2>&1 &
tracker=$!
wait_until 60 "the tracker listens" grep -q '^vgpu tracker listening' "$TESTBED_DIR/log/tracker.log" \
    || die "the tracker did not start: $(tail -n 5 "$TESTBED_DIR/log/tracker.log")"
grep '^vgpu tracker listening' "$TESTBED_DIR/log/tracker.log"
grep -q '^vgpu tracker listening.*auth munge' "$TESTBED_DIR/log/tracker.log" || die "the tracker does not say auth munge"

fill_leaving_one_idle_gpu
run="/usr/bin/vgpu run --local-backend emulated -- java -cp $programs InstalledVectorAdd"
job=$(submit --gres=vgpu:3 -J installed --wrap "$(printf '%s\n' \
    'echo "VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' 'echo "java: $(readlink -f "$(command -v java)")"' \
    "$run; echo \"program status=\$?\"")")
expect_state "$job" COMPLETED 240
output=$TESTBED_DIR/out/$job.out
[ -f "$output" ] || die "no job output $output"
say "job $job's output:"
cat "$output"
assembly=$(sed -n 's/^VGPU_ASSEMBLY=//p' "$output")
[ "$(tr ',' '\n' <<<"$assembly" | grep -c '=remote:')" -eq 2 ] || die "job $job did not borrow 2 GPUs"
grep -qx "program status=0" "$output" || die "the program failed"
[ "$(grep -c '): vector add of 16384 floats right$' "$output")" -eq 3 ] || die "not every vGPU computed right"
grep -q '^java: /usr/lib/jvm/java-25-openjdk' "$output" || die "the job's java is not the root's openjdk-25"
say "the holders' output, where the unit puts it:"
ls /var/log/vgpu/
[ -n "$(ls /var/log/vgpu/holder-*.out 2>/dev/null)" ] || die "no holder output in /var/log/vgpu"
first=$(ls /var/log/vgpu/holder-*.out | head -n 1)
grep -E '^(vgpu worker|vgpu-worker)' "$first" | head -n 3
# worker_tls is on by default: the holder's worker made its self-signed certificate with the root's Java's keytool.
grep -q '^vgpu worker .*, TLS, self-signed SHA-256 ' "$first" || die "the holder's worker does not speak TLS: $(head -n 1 "$first")"
say "/metrics:"
scrape_metrics | grep '^vgpu_build_info'
scrape_metrics | grep -q "^vgpu_build_info{commit=\"$(/usr/bin/vgpu --version | sed 's/.*commit \([^,]*\),.*/\1/')\"" \
    || die "/metrics does not name the installed build"
pass "installed: the tracker ran its unit's ExecStart (MUNGE on), holders' workers spoke TLS; job $job ran a Java program under /usr/bin/vgpu run on" \
    "1 local + 2 borrowed vGPUs ($assembly) with the root's Java 25; holders wrote to /var/log/vgpu"
