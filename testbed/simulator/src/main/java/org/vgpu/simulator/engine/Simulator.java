package org.vgpu.simulator.engine;

import java.util.Objects;
import java.util.function.DoubleConsumer;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.Workload;

/**
 * Runs one workload under one policy: a discrete-event simulation of a Slurm GPU cluster whose vgpu side is the
 * tracker's own planner, idle clock and move policy. The same inputs give the same run.
 */
public final class Simulator {
    private final OverheadModel model;

    public Simulator(OverheadModel model) {
        this.model = Objects.requireNonNull(model, "model");
    }

    /**
     * Simulates {@code workload} under {@code policy} ({@link Policy#VGPU_NO_OVERHEAD} uses {@link
     * OverheadModel#free()} of this simulator's model), telling {@code progress} the fraction done (0 to 1) now and
     * then.
     */
    public PolicyRun run(Workload workload, Policy policy, DoubleConsumer progress) {
        Objects.requireNonNull(workload, "workload");
        Objects.requireNonNull(policy, "policy");
        Objects.requireNonNull(progress, "progress");
        for (SimJob job : workload.jobs()) {
            boolean fits =
                    workload.nodes().stream().anyMatch(node -> node.gpus() >= job.gpus() && node.cpus() >= job.cpus());
            if (!fits) {
                throw new IllegalArgumentException("job " + job.id() + " asks " + job.gpus() + " GPUs and " + job.cpus()
                        + " CPUs on one node, and no node of " + workload.source()
                        + " has that many: Slurm would reject it at submission");
            }
        }
        return new Simulation(workload, policy, model, progress).run();
    }
}
