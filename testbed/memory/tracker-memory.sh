#!/usr/bin/env bash
# The tracker's memory under hostile requests, against the same tracker left idle as long: on an up Slurm testbed
# (testbed/slurm/up.sh, the same VGPU_TESTBED_DIR and VGPU_TESTBED_PORT_BASE), starts `vgpu tracker` twice as the
# scenarios do: once left idle, once given BURSTS (default 1) bursts of hostile-requests.py (malformed lines, forged
# tokens, lines up to 1 MiB, random bytes, hundreds of requests left unfinished at once, garbage to /metrics) of
# SECONDS (default 120) each, the idle one as long. usage: tracker-memory.sh [SECONDS [BURSTS]].
# At its start and after each SECONDS it prints the process's resident memory (VmRSS) and the Java heap's committed size, then
# forces a full GC (jcmd GC.run) and prints the heap in use after it (jstat -gc: what the tracker retains) and the
# resident memory after it, then the tracker's threads and open fds.
# The tracker's JVM options are the launcher's for `vgpu tracker`, unless VGPU_TRACKER_JAVA_OPTIONS replaces them
# (VGPU_TRACKER_JAVA_OPTIONS= : the JVM's own defaults); the first line of each run names them. With
# -XX:NativeMemoryTracking=summary among them, each run ends with the JVM's account of its memory by kind.
set -euo pipefail
source "$(dirname "$0")/../slurm/common.sh"

seconds=${1:-120}
bursts=${2:-1}
JCMD=${JAVA_HOME:+$JAVA_HOME/bin/}jcmd
JSTAT=${JAVA_HOME:+$JAVA_HOME/bin/}jstat
command -v "$JCMD" >/dev/null && command -v "$JSTAT" >/dev/null || die "no jcmd and jstat (set JAVA_HOME to a JDK 25)"
[ -f "$TESTBED_DIR/etc/vgpu.conf" ] || die "no testbed in $TESTBED_DIR: run testbed/slurm/up.sh first"

mib() { echo $((($1 + 1023) / 1024)); }

# heap PID committed|used: KiB of the Java heap (survivors, eden, old) that jstat shows, whichever the collector.
heap() {
    "$JSTAT" -gc "$1" | awk -v what="$2" 'NR == 1 { for (i = 1; i <= NF; i++) column[$i] = i; next }
        { c = $column["S0C"] + $column["S1C"] + $column["EC"] + $column["OC"]
          u = $column["S0U"] + $column["S1U"] + $column["EU"] + $column["OU"]
          printf "%d\n", (what == "used" ? u : c) }'
}

# sample LABEL: one line of figures of the running tracker; the full GC comes after RSS and committed heap are read.
sample() {
    local pid rss committed used threads fds rss_after
    pid=$(cat "$TESTBED_DIR/run/tracker.pid")
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
    threads=$(awk '/^Threads:/ { print $2 }' "/proc/$pid/status")
    fds=$(find "/proc/$pid/fd" -mindepth 1 | wc -l)
    committed=$(heap "$pid" committed)
    "$JCMD" "$pid" GC.run >/dev/null
    used=$(heap "$pid" used)
    rss_after=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
    printf '  %-22s rss %4s MiB  heap committed %4s MiB | full GC: heap used %3s MiB, rss %4s MiB | threads %3s  fds %3s\n' \
        "$1" "$(mib "$rss")" "$(mib "$committed")" "$(mib "$used")" "$(mib "$rss_after")" "$threads" "$fds"
}

# native: the JVM's own account of its committed memory by kind (MiB), with -XX:NativeMemoryTracking=summary only.
native() {
    "$JCMD" "$1" VM.native_memory summary scale=MB 2>/dev/null | awk '
        /^-/ && /committed=/ { name = $0; sub(/^- */, "", name); sub(/ *\(.*/, "", name)
            value = $0; sub(/.*committed=/, "", value); sub(/MB.*/, "", value)
            if (value + 0 >= 1) { printf "%s%s %s", sep, name, value; sep = ", " } }
        END { if (sep) printf "\n" }'
}

run() {
    local what=$1 burst pid
    start_tracker
    pid=$(cat "$TESTBED_DIR/run/tracker.pid")
    say "tracker $what, $bursts x $seconds s, its JVM's options: $("$JCMD" "$pid" VM.command_line | sed -n 's/^jvm_args: //p')"
    sleep 5
    sample "started (+5 s)"
    for burst in $(seq "$bursts"); do
        if [ "$what" = idle ]; then
            sleep "$seconds"
        else
            python3 "$(dirname "$0")/hostile-requests.py" "$(tracker_port)" "$(metrics_port)" "$seconds" | sed 's/^/  /'
            # The unfinished requests' connections close by the server's idle timeout at the latest (30 s).
            sleep 5
        fi
        sample "after $((burst * seconds)) s $what"
    done
    native_memory=$(native "$pid")
    [ -z "$native_memory" ] || echo "  committed by kind (MiB): $native_memory"
    reply=$(tracker_request status)
    [[ "$(tail -n 1 <<<"$reply")" == ok\ assemblies=* ]] || die "the tracker stopped answering: '$reply'"
    stop_tracker
}

trap 'stop_tracker' EXIT
run idle
run hostile
