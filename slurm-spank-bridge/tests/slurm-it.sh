#!/usr/bin/env bash
# Integration test of vgpu_spank.so in a real Slurm on this machine: builds the plugin, brings up the
# project's one-machine Slurm testbed (testbed/slurm/up.sh: slurmctld, slurmd -N n1..n3 with fake GPUs,
# the plugin loaded through plugstack.conf) in a directory of its own and runs its spank-bridge
# scenario (testbed/slurm/scenario-spank-bridge.sh: the checks, against fake_tracker.py), then tears
# the testbed down. Needs root, Debian's Slurm (testbed/slurm/install-slurm.sh), python3, and the vgpu
# launcher built (mvn -DskipTests package), which the testbed renders Slurm's files with.
# Environment: VGPU_TESTBED_DIR (default a fresh /tmp/vgpu-spank-it.XXXXXX) and VGPU_TESTBED_PORT_BASE
# (default 18020) keep it apart from another testbed. Exit status 0 when every check passed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bridge=$(dirname "$here")
testbed=$(dirname "$bridge")/testbed/slurm

[ "$(id -u)" -eq 0 ] || { echo "slurm-it: run as root (slurmd must start job steps)" >&2; exit 2; }
make -s -C "$bridge" all >/dev/null || { echo "slurm-it: cannot build $bridge/vgpu_spank.so" >&2; exit 2; }
VGPU_TESTBED_DIR=${VGPU_TESTBED_DIR:-$(mktemp -u /tmp/vgpu-spank-it.XXXXXX)} \
VGPU_TESTBED_PORT_BASE=${VGPU_TESTBED_PORT_BASE:-18020} \
VGPU_SPANK_PLUGIN=$bridge/vgpu_spank.so \
    exec "$testbed/run-scenarios.sh" spank-bridge
