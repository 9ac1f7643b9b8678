#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# How far a remote call is from the network's floor: builds testbed/gpu/tcp-round-trip.c (64-byte round trips over
# loopback between two C processes, blocking and spinning) and runs it and `vgpu remote-bench` (worker and client
# on GPU 0, in-band, so that only the call path is measured) alternately, ROUNDS times (default 2). Prints, for each
# round, the floor's ratio: remote launch + synchronize / (local launch + synchronize + C round trip), both ways of
# waiting (goal <= 1.10), and the Java plain socket's round trip beside the C one's. Each round also runs
# `vgpu remote-bench --round-trip-ladder` (Java sockets blocking and spinning, Netty with the runtime's event loops,
# a remote synchronize less a local one) and prints its steps beside the C floor.
# Logs in $OUT (default .gpu/out): round-trip-floor-N.log (C), round-trip-bench-N.log (remote-bench) and
# round-trip-ladder-N.log.
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail

script_name=round-trip-floor
run_seconds=${VGPU_GPU_RUN_SECONDS:-510}
source "$(dirname "$0")/steps.sh"

round_trip=$(mktemp -d)/tcp-round-trip
cc -O2 -o "$round_trip" testbed/gpu/tcp-round-trip.c || { echo "$script_name: cannot build tcp-round-trip.c" >&2; exit 2; }
bench=(env JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -Dvgpu.bulk.shared-memory=off"
    "${vgpu[@]}" remote-bench --backend native --device 0 --worker-device 0)
# row_us FILE LABEL: the time in microseconds of the remote-bench row LABEL in FILE
row_us() { grep -m1 "^$2 " "$1" | grep -o '[0-9.]* us' | head -1 | awk '{print $1}'; }
for round in $(seq 1 "${ROUNDS:-2}"); do
    step "round-trip-floor-$round" 60 "$round_trip"
    step "round-trip-bench-$round" 120 "${bench[@]}"
    step "round-trip-ladder-$round" 120 "${bench[@]}" --round-trip-ladder
    c_log=$out/round-trip-floor-$round.log
    bench_log=$out/round-trip-bench-$round.log
    remote=$(row_us "$bench_log" "remote launch + synchronize")
    local_sync=$(row_us "$bench_log" "local launch + synchronize")
    java_rtt=$(row_us "$bench_log" "plain socket 64 B round trip")
    for way in blocking spinning; do
        c_rtt=$(awk -v k="c-round-trip-$way-us" '$1 == k {print $2}' "$c_log")
        awk -v r="$remote" -v l="$local_sync" -v c="$c_rtt" -v j="$java_rtt" -v w="$way" -v n="$round" 'BEGIN {
            if (r == "" || l == "" || c == "") { print "round " n " " w ": a figure is missing (see the logs)"; exit }
            printf "round %s: remote launch+sync %.2f us / (local %.2f + C round trip %s %.2f) = %.3f (goal <= 1.10); Java plain socket round trip %.2f us\n", n, r, l, w, c, r / (l + c), j
        }'
    done
    ladder_log=$out/round-trip-ladder-$round.log
    c_spinning=$(awk '$1 == "c-round-trip-spinning-us" {print $2}' "$c_log")
    echo "round $round ladder: C spinning ${c_spinning:-?} us; Java spinning $(row_us "$ladder_log" "plain socket 64 B round trip, spinning reads") us;" \
        "Netty $(row_us "$ladder_log" "Netty 64 B round trip, the runtime's event loops") us;" \
        "remote - local synchronize adds $(row_us "$ladder_log" "  Netty -> the runtime (remote - local synchronize)") us to Netty"
done
print_summary
exit $failed
