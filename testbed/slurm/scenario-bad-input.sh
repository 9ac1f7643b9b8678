#!/usr/bin/env bash
# Scenario: bad input is refused at once, each with a message that says what is wrong: a malformed
# site configuration (vgpu config check), and submissions that no node can ever satisfy or that
# break vgpu's rules (job_submit.lua, Slurm itself). None of them leaves a job behind.
set -euo pipefail
source "$(dirname "$0")/common.sh"

# expect_refused DESCRIPTION EXPECTED_MESSAGE COMMAND...: COMMAND must fail and print the message.
expect_refused() {
    local description=$1 expected=$2
    shift 2
    local output
    if output=$("$@" 2>&1); then
        die "$description was accepted, expected a refusal: $output"
    fi
    grep -qF -- "$expected" <<<"$output" || die "$description was refused, but without '$expected': $output"
    say "  refused $description: $(grep -F -- "$expected" <<<"$output" | head -n 1)"
}

broken=$TESTBED_DIR/out/broken-vgpu.conf
sed -e 's/^idle_grace = .*/idle_grace = soon/' -e 's/^n1 n3 = .*/n1 n9 = 2/' "$TESTBED_DIR/etc/vgpu.conf" >"$broken"
grace_line=$(grep -n '^idle_grace' "$broken" | cut -d ':' -f 1)
expect_refused "a site configuration with a bad duration" "$broken:$grace_line: idle_grace: 'soon' is not a duration" \
    "$VGPU" config check "$broken"
expect_refused "a site configuration naming an unknown node" "distance to unknown node 'n9'" "$VGPU" config check "$broken"

jobs_before=$(slurm squeue -h | wc -l)
expect_refused "an unknown partition" "invalid partition specified: nosuch" \
    slurm sbatch -p nosuch --gres=vgpu:1 --wrap true
expect_refused "more vGPUs than a node offers" "asks for more than the $TESTBED_VGPUS_PER_NODE vGPUs a node offers" \
    slurm sbatch --gres=vgpu:$((TESTBED_VGPUS_PER_NODE + 1)) --wrap true
expect_refused "a vgpu type" "'${TRES_GRES}vgpu:big' is not vgpu:N; vgpu has no types" slurm sbatch --gres=vgpu:big --wrap true
expect_refused "a vgpu job on two nodes" "a vgpu job runs on one node" slurm sbatch -N 2 --gres=vgpu:2 --wrap true
expect_refused "more GPUs than a node has" "Requested node configuration is not available" \
    slurm sbatch --gres=gpu:$((TESTBED_GPUS_PER_NODE + 1)) --wrap true
expect_refused "a user's job in the lend partition" "partition vgpu-lend holds the vgpu tracker's holder jobs; only the tracker (root) submits jobs there" \
    su nobody -s /bin/bash -c "cd /tmp && SLURM_CONF=$SLURM_CONF timeout $SLURM_CALL_TIMEOUT sbatch -p vgpu-lend --gres=gpu:1 --wrap true"
[ "$(slurm squeue -h | wc -l)" -eq "$jobs_before" ] || die "a refused submission left a job behind: $(slurm squeue)"
pass "bad-input: 2 configuration errors and 6 submissions refused with their reasons"
