#!/usr/bin/env bash
# Stops every daemon up.sh started (lenders, slurmd, slurmctld; found by their PID files in the
# testbed's directory) and removes that directory. Safe to run again, or after a failed up.sh.
set -euo pipefail
source "$(dirname "$0")/common.sh"

# A PID file may be stale and its number reused: stop a process only if its command line names
# this testbed's configuration (slurm.conf, the site key a lender reads, MariaDB's file), or, for slurmdbd, which
# takes no file on its command line, its environment does (SLURM_CONF).
is_testbed_daemon() {
    local pid=$1
    [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$TESTBED_DIR/etc/" && return 0
    [ -r "/proc/$pid/environ" ] && tr '\0' '\n' <"/proc/$pid/environ" | grep -qxF "SLURM_CONF=$TESTBED_DIR/etc/slurm.conf"
}

stop_daemon() {
    local pid_file=$1 pid
    pid=$(cat "$pid_file" 2>/dev/null || true)
    if [[ ! "$pid" =~ ^[0-9]+$ ]] || ! is_testbed_daemon "$pid"; then
        return 0
    fi
    say "stopping $(basename "$pid_file" .pid) (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || return 0
    local deadline=$((SECONDS + 15))
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            say "$(basename "$pid_file" .pid) ignored SIGTERM for 15s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.2
    done
}

if [ ! -d "$TESTBED_DIR" ]; then
    say "nothing to tear down at $TESTBED_DIR"
    exit 0
fi
# The tracker first (it asks lenders and Slurm), then lenders (and their workers); slurmd before slurmctld, so none is
# left trying to reach it; slurmctld before slurmdbd, which takes what it sends last, and MariaDB after both.
for pid_file in "$TESTBED_DIR"/run/tracker.pid "$TESTBED_DIR"/etc/munge/sock/munged.pid "$TESTBED_DIR"/run/lender-*.pid \
    "$TESTBED_DIR"/run/slurmd-*.pid "$TESTBED_DIR"/run/slurmctld.pid "$TESTBED_DIR"/run/slurmdbd.pid \
    "$TESTBED_DIR"/run/mariadb.pid; do
    [ -e "$pid_file" ] && stop_daemon "$pid_file"
done
if [ -f "$TESTBED_DIR/etc/cgroup.conf" ]; then
    remove_slurm_cgroups || say "warning: some slurm_<node> cgroups of the testbed's nodes still hold processes"
fi
rm -rf "$TESTBED_DIR"
say "down: $TESTBED_DIR removed"
