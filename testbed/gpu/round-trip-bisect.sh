#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after
#   VGPU_GPU_OLD_COMMIT=<commit> testbed/gpu/prepare.sh
# staged .gpu/ here with two builds side by side: .gpu/bisect/old (vgpu.jar and vgpu-benchmarks.jar of that commit)
# and .gpu/bisect/new (the same two jars of the checkout prepare.sh ran in); each folder's COMMIT says which commit.
# Is the remote round trip slower in the new build than in the old one, and which knob moves it? Runs `vgpu
# remote-bench` (worker and client on GPU 0, two processes over loopback) with the old and the new jars alternately,
# ROUNDS times (default 2), for each variant of VARIANTS (default all of them, in this order):
#   base         the knobs' defaults, 16 MiB copies, 2000 launch+sync pairs a trial
#   morning      as the H200 run that measured 236.7 us: 256 MiB copies, 200 pairs a trial (same-host-pinned.sh)
#   shm-off      -Dvgpu.bulk.shared-memory=off: no same-host shared memory (no slots, no HOST_REGION pinned memory)
#   stripes-off  -Dvgpu.bulk.striping=off: the worker takes no stripes (clients offer none unless asked anyway)
#   spin-0       -Dvgpu.spin.micros=0: no thread polls (every hop is a kernel wake-up; 75 us before)
#   spin-500     -Dvgpu.spin.micros=500: threads poll ten times longer than the default 50 us (a round trip that
#                once outlasts 50 us makes a thread sleep, and its wake-up may keep the next ones long too)
# The knobs go in JAVA_TOOL_OPTIONS, which the worker process inherits. The bench's worker speaks plain TCP in both
# builds (TLS only with --tls-cost). Prints one line per run: the build, its commit, the variant, and the rows
# "remote launch + synchronize", "local launch + synchronize" and "plain socket 64 B round trip" (medians); then all
# lines again, grouped by variant. Then (LADDER=0 skips it) the new build's --round-trip-ladder polling 50 and 500 us:
# remote synchronize, Netty's round trip and the runtime's step over Netty (median, range over the trials). Logs in $OUT (default .gpu/out): round-trip-bisect-R-VARIANT-BUILD.log.
# BACKEND=emulated runs it without a GPU (the script's own check; the figures then say nothing of a GPU).
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail

script_name=round-trip-bisect
run_seconds=${VGPU_GPU_RUN_SECONDS:-570}
source "$(dirname "$0")/steps.sh"

for build in old new; do
    if [ ! -f ".gpu/bisect/$build/vgpu.jar" ] || [ ! -f ".gpu/bisect/$build/vgpu-benchmarks.jar" ]; then
        echo "$script_name: .gpu/bisect/$build/ lacks vgpu.jar or vgpu-benchmarks.jar; stage both builds first with:" \
            "VGPU_GPU_OLD_COMMIT=1ada802e testbed/gpu/prepare.sh" >&2
        exit 2
    fi
done
all_variants="base morning shm-off stripes-off spin-0 spin-500"
variants=${VARIANTS:-$all_variants}
for variant in $variants; do
    case " $all_variants " in
        *" $variant "*) ;;
        *) echo "$script_name: unknown variant '$variant' in VARIANTS; known: $all_variants" >&2; exit 2 ;;
    esac
done

# variant_options VARIANT: the JVM options of that variant
variant_options() {
    case $1 in
        shm-off) echo "-Dvgpu.bulk.shared-memory=off" ;;
        stripes-off) echo "-Dvgpu.bulk.striping=off" ;;
        spin-0) echo "-Dvgpu.spin.micros=0" ;;
        spin-500) echo "-Dvgpu.spin.micros=500" ;;
        *) echo "" ;;
    esac
}
# variant_sizes VARIANT: the bench's size options of that variant
variant_sizes() {
    case $1 in
        morning) echo "--copy-mib 256 --sync-iterations 200 --async-iterations 2000 --trials 3" ;;
        *) echo "--copy-mib 16 --sync-iterations 2000 --async-iterations 2000 --trials 5" ;;
    esac
}
# row_us FILE LABEL: the time in microseconds of the remote-bench row LABEL in FILE
row_us() { grep -m1 "^$2 " "$1" | grep -o '[0-9.]* us' | head -1 | awk '{print $1}'; }

lines=()
for round in $(seq 1 "${ROUNDS:-2}"); do
    for variant in $variants; do
        # the two builds alternate, and which goes first alternates by round
        order="old new"
        (( round % 2 == 0 )) && order="new old"
        for build in $order; do
            name=round-trip-bisect-$round-$variant-$build
            # shellcheck disable=SC2046 # the sizes are words on purpose
            step "$name" 90 env JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} $(variant_options "$variant")" \
                "${java[@]}" -cp ".gpu/bisect/$build/*" org.vgpu.cli.Vgpu remote-bench \
                --backend "${BACKEND:-native}" --device 0 --worker-device 0 $(variant_sizes "$variant")
            log=$out/$name.log
            line=$(printf 'round %s %-11s %s %-9s remote launch+sync %8s us  local %7s us  plain socket round trip %7s us' \
                "$round" "$variant" "$build" "$(cat ".gpu/bisect/$build/COMMIT" 2>/dev/null || echo '?')" \
                "$(row_us "$log" "remote launch + synchronize")" "$(row_us "$log" "local launch + synchronize")" \
                "$(row_us "$log" "plain socket 64 B round trip")")
            echo "$line"
            lines+=("$line")
        done
    done
done
# The new build's round-trip ladder (the old one may predate it), polling 50 us (the default) and 500 us: what the
# runtime adds to a Netty round trip was 6-8 us in some trials and 70-78 us in others on the H200.
if [ "${LADDER:-1}" = 1 ]; then
    for spin in 50 500; do
        name=round-trip-bisect-ladder-spin-$spin
        step "$name" 90 env JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -Dvgpu.spin.micros=$spin" \
            "${java[@]}" -cp ".gpu/bisect/new/*" org.vgpu.cli.Vgpu remote-bench --round-trip-ladder \
            --backend "${BACKEND:-native}" --device 0 --worker-device 0 --trials 5 --sync-iterations 2000
        log=$out/$name.log
        line=$(printf 'ladder new %-9s spin %3s us: remote synchronize %8s us  Netty %7s us  runtime step %s' \
            "$(cat .gpu/bisect/new/COMMIT 2>/dev/null || echo '?')" "$spin" \
            "$(row_us "$log" "remote synchronize, nothing queued")" \
            "$(row_us "$log" "Netty 64 B round trip, the runtime's event loops")" \
            "$(grep -m1 '^  Netty -> the runtime' "$log" | sed -e 's/^  Netty -> the runtime (remote - local synchronize) *//' -e 's/ *$//')")
        echo "$line"
        lines+=("$line")
    done
fi
echo "== all runs, by variant"
for variant in $variants; do
    printf '%s\n' "${lines[@]}" | awk -v v="$variant" '$3 == v'
done
printf '%s\n' "${lines[@]}" | grep '^ladder' || true
print_summary
exit $failed
