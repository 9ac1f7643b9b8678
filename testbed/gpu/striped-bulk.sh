#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# How the striped bulk path moves bytes over TCP: vgpu remote-bench with the worker and the client on the same GPU,
# shared memory off (-Dvgpu.bulk.shared-memory=off, which the worker inherits through JAVA_TOOL_OPTIONS), twice
# striped over the default 8 connections (-Dvgpu.bulk.striping=always, as to a worker on another host) and twice
# in-band over one connection (-Dvgpu.bulk.striping=off), alternating, 256 MiB each way. Each table's header names
# the path its run used ("bulk bytes ..."); the rows "remote host->device / device->host vs 8 parallel plain
# sockets (Java NIO)" are the striping goal (>= 80 % of 8 parallel loopback streams, measured in the same run).
# Logs in $OUT (default .gpu/out):
#   striped-bulk-stripes-1.log, striped-bulk-inband-1.log, striped-bulk-stripes-2.log, striped-bulk-inband-2.log
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail

script_name=striped-bulk
run_seconds=${VGPU_GPU_RUN_SECONDS:-510}
source "$(dirname "$0")/steps.sh"

bench=("${vgpu[@]}" remote-bench --backend native --device 0 --worker-device 0 --copy-mib 256)
for round in 1 2; do
    step "striped-bulk-stripes-$round" 120 \
        env JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -Dvgpu.bulk.shared-memory=off -Dvgpu.bulk.striping=always" \
        "${bench[@]}"
    step "striped-bulk-inband-$round" 120 \
        env JAVA_TOOL_OPTIONS="${JAVA_TOOL_OPTIONS:-} -Dvgpu.bulk.shared-memory=off -Dvgpu.bulk.striping=off" \
        "${bench[@]}"
done
print_summary
exit $failed
