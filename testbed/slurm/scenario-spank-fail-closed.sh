#!/usr/bin/env bash
# Scenario (testbed started with VGPU_SPANK_PLUGIN): the SPANK bridge, loaded through the rendered
# plugstack.conf, lets a plain GPU job run and fails a vgpu job closed while no tracker answers:
# released by hand, the job ends FAILED with the bridge's reason instead of running without its GPUs.
set -euo pipefail
source "$(dirname "$0")/common.sh"

grep -q '^required .*vgpu_spank\.so' "$TESTBED_DIR/etc/plugstack.conf" \
    || die "plugstack.conf loads no SPANK bridge; start the testbed with VGPU_SPANK_PLUGIN=.../vgpu_spank.so"

plain=$(submit --gres=gpu:1 --wrap 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"')
vgpu=$(submit --gres=vgpu:2 --wrap 'echo "the vgpu job ran"')
trap 'cancel_jobs "$plain" "$vgpu"' EXIT
expect_state "$plain" COMPLETED 30
slurm scontrol release "$vgpu"
expect_state "$vgpu" FAILED 30
grep -q 'needs 2 vGPU(s) and has no assembly' "$TESTBED_DIR/out/$vgpu.out" \
    || die "vgpu job $vgpu failed without the bridge's reason; its output: $(cat "$TESTBED_DIR/out/$vgpu.out")"
! grep -q 'the vgpu job ran' "$TESTBED_DIR/out/$vgpu.out" || die "vgpu job $vgpu ran its command without an assembly"
pass "spank-fail-closed: plain job $plain completed; vgpu job $vgpu ended FAILED:" \
    "$(grep -m 1 'has no assembly' "$TESTBED_DIR/out/$vgpu.out")"
