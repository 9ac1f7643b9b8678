#!/usr/bin/env bash
# Brings the testbed up, runs the scenarios that need no SPANK bridge (or those named as arguments,
# e.g. vgpu-held spank-fail-closed), and
# tears it down again, also when a scenario fails. Exit 0 only when all passed.
set -euo pipefail
here=$(dirname "$0")
source "$here/common.sh"

scenarios=("$@")
if [ "${#scenarios[@]}" -eq 0 ]; then
    scenarios=(gpu-env vgpu-held bad-input one-idle-gpu-per-node assembly-by-hand render-slurm-nodes)
fi
for scenario in "${scenarios[@]}"; do
    [ -x "$here/scenario-$scenario.sh" ] || die "no scenario '$scenario' (no $here/scenario-$scenario.sh)"
done

trap '"$here/down.sh"' EXIT
"$here/up.sh"
failed=()
for scenario in "${scenarios[@]}"; do
    "$here/scenario-$scenario.sh" || failed+=("$scenario")
done
if [ "${#failed[@]}" -gt 0 ]; then
    die "${#failed[@]} of ${#scenarios[@]} scenarios failed: ${failed[*]} (logs were in $TESTBED_DIR/log)"
fi
say "all ${#scenarios[@]} scenarios passed"
