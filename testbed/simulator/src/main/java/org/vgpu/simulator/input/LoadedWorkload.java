package org.vgpu.simulator.input;

import java.util.List;
import java.util.Objects;

import org.vgpu.simulator.workload.Workload;

/**
 * A workload an input gave, with what the reader did to get it: the lines the command prints before the results
 * (how many records it kept, each reason it skipped some and how many, each assumption it made).
 */
public record LoadedWorkload(Workload workload, List<String> summary) {
    public LoadedWorkload {
        Objects.requireNonNull(workload, "workload");
        summary = List.copyOf(summary);
    }
}
