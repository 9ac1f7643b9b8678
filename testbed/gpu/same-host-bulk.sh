#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# How a worker on the client's host moves bulk bytes: vgpu remote-bench with the worker and the client on the same
# GPU, twice through shared memory (the default) and twice in-band over loopback TCP (-Dvgpu.bulk.shared-memory=off,
# which the worker inherits through JAVA_TOOL_OPTIONS), alternating, 256 MiB each way. Each table's header names the
# path its run used ("bulk bytes ..."); the rows "remote vs local copy from/into pinned memory" are the same-host
# goal (>= 80 % of the local vGPU's pinned copies, both directions) for the app's own memory; the rows "remote pinned
# vs local copy from/into pinned memory" are it for the vGPU's page-locked memory, shared with the worker in the
# shared-memory runs and the app's own in the in-band ones (same-host-pinned.sh runs those alone). Logs in $OUT (default .gpu/out):
#   same-host-bulk-shm-1.log, same-host-bulk-inband-1.log, same-host-bulk-shm-2.log, same-host-bulk-inband-2.log
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail

script_name=same-host-bulk
run_seconds=${VGPU_GPU_RUN_SECONDS:-510}
source "$(dirname "$0")/steps.sh"

bench=("${vgpu[@]}" remote-bench --backend native --device 0 --worker-device 0 --copy-mib 256)
for round in 1 2; do
    step "same-host-bulk-shm-$round" 120 "${bench[@]}"
    step "same-host-bulk-inband-$round" 120 \
        env JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -Dvgpu.bulk.shared-memory=off" "${bench[@]}"
done
print_summary
exit $failed
