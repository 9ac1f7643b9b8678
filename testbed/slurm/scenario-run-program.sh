#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): a Java program of one's own on a job's vGPUs. The user
# guide's program (docs/user/own-programs.md, "A complete program", compiled here against vgpu.jar) runs under
# `vgpu run -- java` in a vgpu:3 job that starts on 1 local + 2 borrowed GPUs: its vGPUs are opened by the interposer in the program's JVM, it computes
# on vGPU 0, its exit status comes through and its agent socket is gone after it. A second program in the same
# job crashes: its status (1) comes through and its socket is removed too. At the end no holder is left.
set -euo pipefail
source "$(dirname "$0")/common.sh"

FILL_JOBS=()
job=
trap 'cancel_jobs "${FILL_JOBS[@]}" ${job:+"$job"}; stop_tracker' EXIT
start_tracker
fill_leaving_one_idle_gpu

jdk=${JAVA_HOME:+$JAVA_HOME/bin/}
programs=$TESTBED_DIR/out/run-program
rm -rf "$programs" && mkdir -p "$programs"
python3 - "$REPO_ROOT/docs/user/own-programs.md" "$programs/VectorAdd.java" <<'EXTRACT'
import re, sys
guide = open(sys.argv[1]).read()
block = re.compile(r"```java\n(.*?)```", re.S).search(guide, guide.index("## A complete program"))
open(sys.argv[2], "w").write(block.group(1))
EXTRACT
cat >"$programs/Crash.java" <<'JAVA'
import org.vgpu.api.VirtualGpus;

public class Crash {
    public static void main(String[] args) {
        VirtualGpus.fromEnvironment().gpu(0).memAlloc(1 << 20);
        throw new IllegalStateException("the program's own bug");
    }
}
JAVA
"${jdk}javac" -cp "$REPO_ROOT/job-wrapper/target/vgpu.jar" -d "$programs" "$programs"/*.java \
    || die "the user guide's program does not compile against vgpu.jar"

run="$VGPU run --local-backend emulated -- ${jdk}java -cp $programs"
job=$(submit --gres=vgpu:3 -J run-program --wrap "$(printf '%s\n' \
    'echo "VGPU_ASSEMBLY=$VGPU_ASSEMBLY"' \
    "$run VectorAdd; echo \"program status=\$?\"" \
    'if [ -e "$VGPU_AGENT_SOCKET" ]; then echo "socket left"; else echo "socket removed"; fi' \
    "$run Crash; echo \"crash status=\$?\"" \
    'if [ -e "$VGPU_AGENT_SOCKET" ]; then echo "socket left after crash"; else echo "socket removed after crash"; fi')")
expect_state "$job" COMPLETED 240
output=$TESTBED_DIR/out/$job.out
[ -f "$output" ] || die "no job output $output"
assembly=$(sed -n 's/^VGPU_ASSEMBLY=//p' "$output")
[ "$(tr ',' '\n' <<<"$assembly" | grep -c '=remote:')" -eq 2 ] || die "job $job did not borrow 2 GPUs: $(cat "$output")"
for expected in \
    "GPUs: job: 3 vGPUs of job $job (1 local, 2 remote, migratable), local ones on the CPU EMULATION" \
    "program status=0" "socket removed" "crash status=1" "socket removed after crash"; do
    grep -qxF "$expected" "$output" || die "job $job's output lacks '$expected': $(cat "$output")"
done
# vGPU 0 is the node's local GPU, the emulation's device of that index
grep -Eqx "vector add on vGPU 0 \(vgpu CPU emulation #[0-9]+\): 65536 floats, all right" "$output" \
    || die "the user guide's program did not compute on vGPU 0: $(cat "$output")"
grep -q "IllegalStateException: the program's own bug" "$output" || die "the crash is not in the output: $(cat "$output")"
wait_until 30 "job $job's holders are gone" no_holders_of "$job" \
    || die "holders of job $job still in squeue after it ended: $(holders_of "$job" | tr '\n' ' ')"
pass "run-program: the user guide's program ran under vgpu run -- java in job $job on 1 local + 2 borrowed vGPUs" \
    "(assembly $assembly), exit 0, socket removed; a crashing program's status 1 came through, socket removed"
