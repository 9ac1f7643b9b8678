#!/usr/bin/env bash
# Scenario: `vgpu config render --slurm-nodes` against the running Slurm, as an admin renders on a node where scontrol
# reaches slurmctld. The testbed's configuration is changed into one that says little of its nodes (each section
# `gpus = 1`, no gpu_devices) and names a node n9 that Slurm does not have: the rendered slurm.conf lines give each node
# the GPU count `scontrol show node` shows, gres.conf names the nodes as a range (Slurm's own `scontrol show hostlist`)
# with device files for Slurm's count, and n9 is left out with one line on stderr. Then every way it refuses, each with
# one line on stderr, nothing on stdout and exit 1: slurmctld unreachable, slurm.conf missing, scontrol not on the PATH,
# and a GPU node of Slurm's that has no [node] section.
set -euo pipefail
source "$(dirname "$0")/common.sh"

etc=$TESTBED_DIR/etc
work=$TESTBED_DIR/render-slurm-nodes
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

# The testbed's configuration saying 1 GPU per node and no device files, plus a node Slurm does not have.
sparse=$work/vgpu.conf
sed -e 's/^gpus = [0-9]*$/gpus = 1/' -e '/^gpu_devices = /d' -e 's/^\[distance\]$/[distance]\ndefault = 3/' \
    "$etc/vgpu.conf" >"$sparse"
printf '\n[node n9]\ngpus = 2\ngpu_memory = 80GiB\nvgpus = 4\nlender_port = %s\n' \
    "$((TESTBED_PORT_BASE + 59))" >>"$sparse"

# render_into NAME ARGS...: runs vgpu config render ARGS, with the environment's changes in render_env (VAR=VALUE
# each), stdout in $work/NAME.out and stderr in $work/NAME.err, and prints its exit status.
render_env=()
render_into() {
    local name=$1 status=0
    shift
    env "${render_env[@]}" "$VGPU" config render "$@" >"$work/$name.out" 2>"$work/$name.err" || status=$?
    echo "$status"
}

# Slurm's view: each node's name and gpu count, as scontrol shows them.
declare -A slurm_gpus=()
while read -r name gres; do
    count=$(sed -n 's/.*\bgpu:\([0-9][0-9]*\).*/\1/p' <<<"$gres")
    slurm_gpus[$name]=${count:-0}
done < <(slurm scontrol -o show node | sed -n 's/^NodeName=\([^ ]*\) .* Gres=\([^ ]*\) .*/\1 \2/p')
[ "${#slurm_gpus[@]}" -eq "${#TESTBED_NODES[@]}" ] \
    || die "scontrol shows ${#slurm_gpus[@]} nodes with a Gres, expected ${#TESTBED_NODES[@]}: ${!slurm_gpus[*]}"

status=$(render_into slurm.conf --slurm-nodes --what slurm.conf "$sparse")
[ "$status" = 0 ] || die "render --slurm-nodes --what slurm.conf exited $status: $(cat "$work/slurm.conf.err")"
[ "$(cat "$work/slurm.conf.err")" = "vgpu config render: --slurm-nodes: left out n9, which Slurm has no GPUs on" ] \
    || die "render --slurm-nodes did not say just that n9 is left out: $(cat "$work/slurm.conf.err")"
! grep -q '^NodeName=n9 ' "$work/slurm.conf.out" || die "the rendered slurm.conf has a line for n9, which Slurm lacks"
for node in "${!slurm_gpus[@]}"; do
    line=$(grep "^NodeName=$node " "$work/slurm.conf.out") || die "the rendered slurm.conf has no line for $node"
    grep -q " Gres=gpu:${slurm_gpus[$node]},vgpu:" <<<"$line" \
        || die "scontrol gives $node ${slurm_gpus[$node]} GPUs, the rendered line says: $line"
done
say "rendered slurm.conf, GPU counts from Slurm: $(grep '^NodeName=' "$work/slurm.conf.out" \
    | sed 's/^NodeName=\([^ ]*\) .*Gres=\([^ ]*\) .*/\1 \2/' | paste -sd ';' -)"

status=$(render_into gres.conf --slurm-nodes --what gres.conf "$sparse")
[ "$status" = 0 ] || die "render --slurm-nodes --what gres.conf exited $status: $(cat "$work/gres.conf.err")"
for count in $(printf '%s\n' "${slurm_gpus[@]}" | sort -u); do
    nodes=()
    for node in "${!slurm_gpus[@]}"; do
        [ "${slurm_gpus[$node]}" = "$count" ] && nodes+=("$node")
    done
    range=$(slurm scontrol show hostlist "$(printf '%s\n' "${nodes[@]}" | sort -V | paste -sd , -)")
    files=/dev/nvidia0
    [ "$count" -gt 1 ] && files="/dev/nvidia[0-$((count - 1))]"
    grep -qxF "NodeName=$range Name=gpu File=$files" "$work/gres.conf.out" \
        || die "the rendered gres.conf lacks 'NodeName=$range Name=gpu File=$files': $(grep Name=gpu "$work/gres.conf.out")"
done
say "rendered gres.conf: $(grep '^NodeName=.* Name=gpu ' "$work/gres.conf.out" | paste -sd ';' -)"

# expect_refusal NAME WORDS ARGS...: render ARGS exits 1 with one line on stderr containing WORDS and nothing on stdout.
expect_refusal() {
    local name=$1 words=$2 status
    shift 2
    status=$(render_into "$name" "$@")
    [ "$status" = 1 ] || die "$name: render exited $status, expected 1: $(cat "$work/$name.err")"
    [ ! -s "$work/$name.out" ] || die "$name: render printed on stdout: $(head -n 3 "$work/$name.out")"
    [ "$(wc -l <"$work/$name.err")" = 1 ] || die "$name: stderr is not one line: $(cat "$work/$name.err")"
    grep -qF -- "$words" "$work/$name.err" || die "$name: stderr does not say '$words': $(cat "$work/$name.err")"
    say "$name: exit 1, $(cat "$work/$name.err")"
}

# slurmctld unreachable: a slurm.conf naming a port nothing listens on.
dead_port=$((TESTBED_PORT_BASE + 97))
! (exec 3<>"/dev/tcp/127.0.0.1/$dead_port") 2>/dev/null || die "port $dead_port is in use; the scenario needs it free"
mkdir -p "$work/dead"
sed "s/^SlurmctldPort=.*/SlurmctldPort=$dead_port/" "$etc/slurm.conf" >"$work/dead/slurm.conf"
render_env=("SLURM_CONF=$work/dead/slurm.conf")
expect_refusal unreachable "Unable to contact slurm controller" \
    --slurm-nodes --what gres.conf "$etc/vgpu.conf"

# slurm.conf missing: scontrol retries reading it for a minute; the message says what scontrol said meanwhile.
render_env=("SLURM_CONF=$work/missing/slurm.conf")
expect_refusal no-slurm-conf "$work/missing/slurm.conf" \
    --slurm-nodes --what gres.conf "$etc/vgpu.conf"

# scontrol not on the PATH (the launcher's own tools are).
mkdir -p "$work/bin"
for tool in sh dirname readlink sed; do
    ln -s "$(command -v "$tool")" "$work/bin/$tool"
done
render_env=("PATH=$work/bin")
expect_refusal no-scontrol "cannot run 'scontrol --version': no such program" \
    --slurm-nodes --what gres.conf "$etc/vgpu.conf"

# A GPU node of Slurm's without a section: the configuration without n3's.
awk '/^\[node n3\]$/ { skip = 1; next } /^\[/ { skip = 0 } !skip && !/^n[0-9]+ n3 = |^n3 / { print }' \
    "$etc/vgpu.conf" >"$work/without-n3.conf"
render_env=()
"$VGPU" config check "$work/without-n3.conf" >/dev/null 2>&1 \
    || die "the configuration without n3 is not valid: $("$VGPU" config check "$work/without-n3.conf" 2>&1)"
expect_refusal no-section "Slurm's GPU nodes n3 have no [node] section" \
    --slurm-nodes --what slurm.conf "$work/without-n3.conf"

pass "render-slurm-nodes: the rendered slurm.conf and gres.conf take each node's GPU count from scontrol, n9 left" \
    "out; an unreachable slurmctld, a missing slurm.conf, no scontrol and a node without a section each refused in" \
    "one line, exit 1"
