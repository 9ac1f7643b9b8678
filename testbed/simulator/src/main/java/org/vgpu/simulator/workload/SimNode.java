package org.vgpu.simulator.workload;

import java.util.Objects;

/** One node of the simulated cluster: its GPUs and CPUs, as Slurm's node table would give them. */
public record SimNode(String name, int gpus, int cpus) {
    public SimNode {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("a node needs a name");
        }
        if (gpus < 0 || cpus < 1) {
            throw new IllegalArgumentException(
                    "node " + name + ": gpus must be >= 0 and cpus >= 1, got " + gpus + " GPUs and " + cpus + " CPUs");
        }
    }
}
