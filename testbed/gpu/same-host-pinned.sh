#!/usr/bin/env bash
# Run ON the GPU machine, from the repository root, after testbed/gpu/prepare.sh staged .gpu/ here.
# A Java program's page-locked memory on a remote vGPU whose worker is on its host: vgpu remote-bench with the worker
# and the client on GPU 0, twice, 256 MiB each way. The line "remote pinned memory (memAllocHost): ..." says whether
# the vGPU's memAllocHost memory is a region the worker shares and has registered with the driver; the rows
# "remote host->device 256 MiB from pinned memory" and "remote device->host 256 MiB into pinned memory" time copies
# of it, and "remote pinned vs local copy from/into pinned memory" set them against the local vGPU's copies of its
# own pinned memory in the same run: the same-host goal, >= 80 % both ways. The other rows are remote-bench's usual
# ones (the app's own memory through the session's bulk path among them). Logs in $OUT (default .gpu/out):
# same-host-pinned-1.log, same-host-pinned-2.log; the goal's lines of both are printed again at the end.
# Java: $JAVA when set, else the runtime in .gpu/jre.tar.xz unpacked to /tmp/jre.
set -uo pipefail

script_name=same-host-pinned
run_seconds=${VGPU_GPU_RUN_SECONDS:-300}
source "$(dirname "$0")/steps.sh"

bench=("${vgpu[@]}" remote-bench --backend native --device 0 --worker-device 0 --copy-mib 256
    --sync-iterations 200 --async-iterations 2000)
for round in 1 2; do
    step "same-host-pinned-$round" 120 "${bench[@]}"
done
echo "== the same-host pinned rows"
for round in 1 2; do
    echo "-- round $round"
    grep -E '^(measurement|remote pinned memory|remote host->device|remote device->host|  \(local |  remote pinned vs)' \
        "$out/same-host-pinned-$round.log"
done
print_summary
exit $failed
