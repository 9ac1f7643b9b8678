#!/usr/bin/env bash
# README's first command: the whole story of vgpu on a real Slurm cluster on this one machine, as root.
# Installs Debian's Slurm where it is missing, builds the SPANK bridge, brings up the testbed (3 nodes
# with 4 emulated GPUs each, testbed/slurm/up.sh), starts the tracker, fills the nodes, submits
# `sbatch --gres=vgpu:3` with a checked workload, shows it start on 1 local + 2 borrowed GPUs, ends the
# fillers on its node, shows the tracker's hook moving both vGPUs home while the workload runs, prints
# `vgpu report`, a /metrics excerpt and the release-to-migration latency, checks the workload's results,
# and tears the cluster down, also on failure (its logs and the jobs' output kept in $VGPU_TESTBED_DIR.failed)
# or Ctrl-C. The steps and their checks are scenario hook-home's (testbed/slurm/common.sh). Exit 0 only
# when every check passed.
# Environment: VGPU_TESTBED_DIR (default /tmp/vgpu-story), VGPU_TESTBED_PORT_BASE (17900),
# VGPU_STORY_HOLD (how long the workload keeps its vGPUs open for the moves, default 30 s).
set -euo pipefail
export VGPU_TESTBED_DIR=${VGPU_TESTBED_DIR:-/tmp/vgpu-story}
slurm_dir=$(cd "$(dirname "$0")/slurm" && pwd)
source "$slurm_dir/common.sh"
hold=${VGPU_STORY_HOLD:-30}
bridge=$REPO_ROOT/slurm-spank-bridge/vgpu_spank.so
started=$SECONDS

section() {
    printf '\n== %s ==\n' "$*"
}

indent() {
    sed 's/^/  /'
}

# The lines of a `vgpu report` table from the one starting with HEADING to the next empty line.
report_section() {
    sed -n "/^$1/,/^\$/p" | sed '/^$/d'
}

[ "$(id -u)" -eq 0 ] || die "story.sh needs root: it installs Slurm when missing and runs Slurm's daemons (sudo -E $0)"
[ ! -e "$TESTBED_DIR" ] || die "$TESTBED_DIR exists: another story or testbed runs there; tear it down with" \
    "VGPU_TESTBED_DIR=$TESTBED_DIR $slurm_dir/down.sh, or choose another VGPU_TESTBED_DIR"

# Every job of the cluster first (their steps would outlive slurmd), then the tracker and the daemons
# (down.sh). Ctrl-C ends the story through here too, and a second one does not cut the teardown short.
tear_down() {
    local status=$?
    trap '' INT TERM
    section "Teardown"
    local jobs=()
    if [ -e "$SLURM_CONF" ] && timeout 5 scontrol ping >/dev/null 2>&1; then
        mapfile -t jobs < <(slurm squeue -h -o %i)
        cancel_jobs "${jobs[@]}"
    fi
    if [ "$status" -ne 0 ] && [ -d "$TESTBED_DIR/log" ]; then
        # down.sh removes the testbed's directory: the daemons' logs and the jobs' output stay for a look.
        rm -rf "$TESTBED_DIR.failed"
        mkdir -p "$TESTBED_DIR.failed"
        cp -r "$TESTBED_DIR/log" "$TESTBED_DIR/out" "$TESTBED_DIR.failed/" 2>/dev/null || true
        echo "  logs and job output kept in $TESTBED_DIR.failed"
    fi
    if "$slurm_dir/down.sh" >"$TESTBED_DIR.down.log" 2>&1; then
        echo "  cluster stopped, $TESTBED_DIR removed"
        rm -f "$TESTBED_DIR.down.log"
    else
        echo "  down.sh failed: $(cat "$TESTBED_DIR.down.log")"
    fi
    if [ "$status" -eq 0 ]; then
        printf '\nThe story ran in %d s.\n' $((SECONDS - started))
    elif [ "$status" -eq 130 ]; then
        printf '\nThe story was interrupted after %d s.\n' $((SECONDS - started))
    else
        printf '\nThe story FAILED (exit %d) after %d s; the error is above.\n' "$status" $((SECONDS - started))
    fi
}
trap tear_down EXIT
trap 'exit 130' INT TERM

echo "vgpu on a real Slurm cluster: a job starts on borrowed GPUs, and they come home when its node frees GPUs."
echo "The GPUs are EMULATED: fake device files for Slurm, the GPU work on the CPU (not a GPU; proves nothing about GPUs)."

section "Slurm"
"$slurm_dir/install-slurm.sh" | indent
echo "  $(slurmctld -V) from Debian's packages"
# As the user who ran sudo, so that the checkout's build files stay theirs.
make_as_user=()
[ -z "${SUDO_USER:-}" ] || make_as_user=(setpriv --reuid="$SUDO_UID" --regid="$SUDO_GID" --init-groups)
"${make_as_user[@]}" make -s -C "$REPO_ROOT/slurm-spank-bridge" all >/dev/null \
    || die "building the SPANK bridge failed (make -C slurm-spank-bridge all)"
echo "  SPANK plugin $bridge built"

section "The cluster (testbed/slurm/up.sh)"
VGPU_SPANK_PLUGIN=$bridge VGPU_TESTBED_CGROUPS=no "$slurm_dir/up.sh" >"$TESTBED_DIR.up.log" 2>&1 \
    || die "up.sh failed: $(tail -n 5 "$TESTBED_DIR.up.log")"
mv "$TESTBED_DIR.up.log" "$TESTBED_DIR/log/up.log"
echo "  slurmctld and slurmd -N ${TESTBED_NODES[*]} on 127.0.0.1:$TESTBED_PORT_BASE.., the SPANK bridge in plugstack.conf,"
echo "  a vgpu lender on each node (lending EMULATED GPUs); configuration, logs and job output in $TESTBED_DIR"
slurm sinfo -N -p gpu -o '%N %T %G' | indent

section "The tracker"
start_tracker
echo "  vgpu tracker: polls Slurm every second, its socket on 127.0.0.1:$(tracker_port)," \
    "Prometheus metrics on http://127.0.0.1:$(metrics_port)/metrics"

section "Fill the nodes, then sbatch --gres=vgpu:3"
echo "  every node runs a filler job that leaves 1 GPU idle; no node has 3 idle GPUs"
submitted=$SECONDS
start_borrowing_job "$hold"
echo "  job $BORROWER (vgpu run --hold $hold: checks its workloads on every vGPU, holds them, checks again)" \
    "started after $((SECONDS - submitted)) s on $BORROWER_NODE"
slurm squeue -o '%.5i %.10P %.22j %.8T %.6N %b' | indent
report=$("$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf")
echo "  vgpu report: 1 local GPU + 2 borrowed, each through a holder job on its lender's node:"
report_section 'Borrowed GPUs now' <<<"$report" | indent

section "GPUs free up on $BORROWER_NODE"
sleep 5 # the workload's first pass on the borrowed vGPUs, so the agent has counters to report
log_lines=$(wc -l <"$TESTBED_DIR/log/tracker.log")
echo "  the filler on $BORROWER_NODE ends; the tracker's hook moves the borrowed vGPUs home while the job runs:"
free_borrower_node
wait_borrower_home
tail -n +$((log_lines + 1)) "$TESTBED_DIR/log/tracker.log" | grep -E 'migration [0-9]+: vGPU' | sed -E 's/^.*(migration [0-9]+:)/\1/' | indent
echo "  release -> first migration start: $RELEASE_TO_MIGRATION s (upper bound: the tracker's log, read every 0.5 s)"
echo "  the lenders' holders ${LENDER_HOLDERS[*]} have ended: their GPUs are back in Slurm"

section "vgpu report"
migrations=$(check_borrower_migrations "$TESTBED_DIR/out/report-$BORROWER.json")
"$VGPU" report --config "$TESTBED_DIR/etc/vgpu.conf" | indent
echo "  (vgpu report --format json lists both migrations of job $BORROWER, blocked ms:" \
    "$(grep -o '"blocked_ms": [0-9]*' <<<"$migrations" | cut -d ' ' -f 2 | paste -sd ' ' -))"

section "Prometheus /metrics (excerpt)"
metrics=$(scrape_metrics) || die "the tracker serves no /metrics on port $(metrics_port)"
grep -E '^vgpu_(borrowed_gpus|migrations_total|migration_blocked_seconds_(count|sum)|held_jobs|idle_gpus)' <<<"$metrics" | indent

section "The workload's results (job $BORROWER, after its hold)"
finish_borrower
# Abridged: where each vGPU was and went, the migration agent's lines, the summaries (the whole output is
# in out/JOB.out while the story runs).
grep -E '^vgpu job|^vgpu [0-9]+: |^(PASS|FAIL):|held-data|TrackerLink' "$TESTBED_DIR/out/$BORROWER.out" \
    | sed -E 's/^\[[^]]*\] INFO [a-z.]*\.([A-Za-z]+) - /\1: /' | indent
echo "  checked: every workload passed on all 3 vGPUs before the moves and after them, the held data came through"
