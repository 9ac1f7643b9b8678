# Sourced by the scripts that run ON a GPU machine (run-on-gpu.sh, two-gpus.sh, jcuda-programs.sh), from the
# repository root, after testbed/gpu/prepare.sh staged .gpu/ here. Sets: top (the checkout), out ($OUT, default
# .gpu/out), JAVA (else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre), java (JAVA with native access), vgpu
# (the launcher's command), test_classes, junit_jar, failed; and step, whose runs share one time budget of
# $run_seconds from the script's start ($SECONDS counts from there, the unpacking of the runtime included), and
# print_summary; scripts that run no steps (jcuda-programs.sh) take only the set-up.
# $script_name names the script in messages.

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$top"
out=${OUT:-$top/.gpu/out}
mkdir -p "$out"

if [ -z "${JAVA:-}" ]; then
    tar xJf .gpu/jre.tar.xz -C /tmp || { echo "$script_name: cannot unpack .gpu/jre.tar.xz (run prepare.sh first)" >&2; exit 2; }
    JAVA=/tmp/jre/bin/java
fi
java=("$JAVA" --enable-native-access=ALL-UNNAMED)
vgpu=("${java[@]}" -cp '.gpu/lib/*' org.vgpu.cli.Vgpu)
test_classes=.gpu/test/classes
junit_jar=$(ls .gpu/test/junit-platform-console-standalone-*.jar)

failed=0
summary=()
# step NAME BUDGET COMMAND...: runs COMMAND with its output in $out/NAME.log, for at most BUDGET seconds (the
# smaller of BUDGET and the run's time left; a step with less than 10 s left is skipped), then prints the log's
# last 60 lines. A step that fails, times out or is skipped sets failed=1; the next steps run all the same.
step() {
    local name=$1 budget=$2
    shift 2
    local left=$(( run_seconds - SECONDS ))
    if (( left < 10 )); then
        echo "== $name: SKIPPED (the run's time is spent)"
        summary+=("$(printf '%-30s skipped' "$name")")
        failed=1
        return
    fi
    (( budget > left )) && budget=$left
    echo "== $name (at most ${budget} s): $*"
    local began=$SECONDS status=0
    # A step that ignores SIGTERM (a JVM stuck in a driver call) is killed 10 s later. Worker processes a bench
    # started end on their own: when its connection to them closes, or idle after their 30 s idle timeout.
    timeout --kill-after=10 "$budget" "$@" >"$out/$name.log" 2>&1 || status=$?
    local took=$(( SECONDS - began )) verdict=ok
    if (( status == 124 || status == 137 )); then
        verdict="TIMED OUT after ${budget} s"
        failed=1
    elif (( status != 0 )); then
        verdict="FAILED (exit $status)"
        failed=1
    fi
    echo "== $name: $verdict, ${took} s"
    summary+=("$(printf '%-30s %4d s  %s' "$name" "$took" "$verdict")")
    tail -n 60 "$out/$name.log"
}

# junit NAME BUDGET JUNIT-ARGS...: the staged test classes through JUnit's console launcher, as a step.
junit() {
    local name=$1 budget=$2
    shift 2
    step "$name" "$budget" "${java[@]}" "${junit_properties[@]}" -cp ".gpu/lib/*:$test_classes:$junit_jar" \
        org.junit.platform.console.ConsoleLauncher execute "$@" --fail-if-no-tests --details tree --disable-banner
    # The tail above shows how many failed, not which: name them here, since the whole log may not come back.
    if grep -q '✘' "$out/$name.log"; then
        echo "== failed in $name:"
        grep -B1 -A3 '✘' "$out/$name.log" | head -n 80
    fi
}
junit_properties=()

print_summary() {
    echo "== seconds per step (the run's budget: $run_seconds s)"
    printf '%s\n' "${summary[@]}"
    echo "== total: $SECONDS s"
}
