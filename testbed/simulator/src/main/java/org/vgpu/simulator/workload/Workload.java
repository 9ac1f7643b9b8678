package org.vgpu.simulator.workload;

import java.util.Comparator;
import java.util.List;
import java.util.Objects;

/**
 * A cluster and the jobs submitted to it: what every input (trace, sacct history, SWF file, generator) gives
 * the simulation. Jobs are kept in submit order.
 *
 * @param source a line that says where it came from, for reports ("alibaba-gpu-v2023", "sacct FILE", "generated
 *     medium seed 1")
 */
public record Workload(String source, List<SimNode> nodes, List<SimJob> jobs) {
    public Workload {
        Objects.requireNonNull(source, "source");
        nodes = List.copyOf(nodes);
        jobs = jobs.stream()
                .sorted(Comparator.comparingLong(SimJob::submitSecond))
                .toList();
        if (nodes.isEmpty()) {
            throw new IllegalArgumentException(source + ": a workload needs at least one node");
        }
    }
}
