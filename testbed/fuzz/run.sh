#!/usr/bin/env bash
# Fuzzes the Jazzer @FuzzTest targets for a while each and prints the executions per target (docs/fuzzing.md).
#
#   testbed/fuzz/run.sh [TARGET|all] [MINUTES]      e.g. testbed/fuzz/run.sh all 3
#
# TARGET is one of the names below (default all), MINUTES the time per target (default 1). Each target runs as its
# JUnit test in Jazzer's fuzzing mode (JAZZER_FUZZ=1), in rounds of one minute: Jazzer's JUnit integration takes the
# time limit from @FuzzTest(maxDuration = "1m") only, so N minutes are N rounds, each starting from the inputs the
# earlier ones grew (.cifuzz-corpus/ in the module, ignored by git). An input that fails the target is written as
# crash-<sha1> into the target's regression inputs (src/test/resources/<package>/<Class>Inputs/<method>/), where the
# normal build replays it once committed; the round stops there and the summary says FAILED.
# The classes are compiled for Java 23 here: Jazzer 0.24.0 instruments class files up to version 67 (Java 23) only,
# and a Java 25 class file left uninstrumented gives the fuzzer no coverage to steer by. Run from the repository root.
set -euo pipefail

declare -A TARGETS=(
    [requests]="rcuda-runtime/vgpu-remote-client org.vgpu.runtime.remote.protocol.WireDecoderFuzzTest#requests"
    [replies]="rcuda-runtime/vgpu-remote-client org.vgpu.runtime.remote.protocol.WireDecoderFuzzTest#replies"
    [agent-channel]="rcuda-runtime/vgpu-common org.vgpu.common.agent.AgentChannelFuzzTest#lines"
    [tracker]="idle-gpu-tracker org.vgpu.tracker.TrackerProtocolFuzzTest#requests"
    [munge]="idle-gpu-tracker org.vgpu.tracker.TrackerProtocolFuzzTest#munge"
    [site-config]="site-config org.vgpu.siteconfig.SiteConfigFuzzTest#file"
    [ledger-line]="idle-gpu-tracker org.vgpu.tracker.ledger.LedgerFuzzTest#line"
    [ledger-file]="idle-gpu-tracker org.vgpu.tracker.ledger.LedgerFuzzTest#file"
    [scontrol-json]="idle-gpu-tracker org.vgpu.tracker.slurm.ScontrolJsonFuzzTest#documents"
    [environment]="job-wrapper/vgpu-job org.vgpu.job.JobEnvironmentFuzzTest#environment"
)
ORDER=(requests replies agent-channel tracker munge site-config ledger-line ledger-file scontrol-json environment)

target=${1:-all}
minutes=${2:-1}
if [[ $target == all ]]; then
    chosen=("${ORDER[@]}")
elif [[ -n ${TARGETS[$target]:-} ]]; then
    chosen=("$target")
else
    echo "usage: $0 [all|${ORDER[*]// /|}] [MINUTES]" >&2
    exit 2
fi
[[ $minutes =~ ^[1-9][0-9]*$ ]] || { echo "MINUTES must be a whole number of minutes >= 1, got '$minutes'" >&2; exit 2; }

export JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
# Jazzer loads its agent into the running JVM; a fuzzed JVM gets a bounded heap, so memory that grows with the input
# is a finding (an OutOfMemoryError) rather than a slow machine. -timeout: an input that runs 10 s is a hang.
# The daemons' INFO lines (a tracker paused and resumed 300,000 times) only slow the run down; errors still show.
fuzz_jvm="-XX:+EnableDynamicAgentLoading -Xmx1g -XX:MaxDirectMemorySize=256m -Dio.netty.leakDetection.level=simple"
fuzz_jvm+=" -Dorg.slf4j.simpleLogger.defaultLogLevel=error"
common=(-B -o -Dmaven.compiler.release=23 -Dspotless.check.skip=true)

modules=$(for name in "${chosen[@]}"; do echo "${TARGETS[$name]%% *}"; done | sort -u | paste -sd,)
echo "compiling $modules (and what they use) for Java 23 ..."
mvn "${common[@]}" -q -pl "$modules" -am clean test-compile
logs=target/fuzz
mkdir -p "$logs"

summary=()
for name in "${chosen[@]}"; do
    read -r module test <<<"${TARGETS[$name]}"
    total=0
    outcome=passed
    for round in $(seq 1 "$minutes"); do
        log="$logs/$name-$round.log"
        echo "fuzzing $name ($test), minute $round of $minutes; log: $log"
        status=0
        JAZZER_FUZZ=1 mvn "${common[@]}" -pl "$module" -am test-compile surefire:test -Dtest="$test" \
            -Dsurefire.failIfNoSpecifiedTests=false -DtrimStackTrace=false \
            "-Dvgpu.fuzz.argLine=$fuzz_jvm" \
            -Djazzer.internal.arg.0=fuzz -Djazzer.internal.arg.1=-timeout=10 >"$log" 2>&1 || status=$?
        # libFuzzer's last status line ("#N DONE ..." or, after a finding, the last "#N ...") counts the executions.
        runs=$(grep -aoE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
        total=$((total + ${runs:-0}))
        if [[ $status -ne 0 ]]; then
            outcome="FAILED in minute $round (finding: see $log)"
            break
        fi
    done
    summary+=("$(printf '%-12s %12s executions  %s' "$name" "$total" "$outcome")")
done

echo
echo "fuzzing, $minutes min per target, $(date -u +%Y-%m-%dT%H:%MZ):"
printf '%s\n' "${summary[@]}"
