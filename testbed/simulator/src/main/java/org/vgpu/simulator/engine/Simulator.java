package org.vgpu.simulator.engine;

import java.util.Objects;
import java.util.function.DoubleConsumer;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;

/**
 * Runs one workload under one policy: a discrete-event simulation of a Slurm GPU cluster whose vgpu side is the
 * tracker's own planner, idle clock and move policy. The same inputs give the same run.
 */
public final class Simulator {
    private final OverheadModel model;
    private final BackfillSettings backfillSettings;
    private final TrackerSettings tracker;

    /** A simulator that backfills at every scheduling pass. */
    public Simulator(OverheadModel model) {
        this(model, BackfillSettings.EASY_EVERY_PASS);
    }

    /** A simulator of a tracker with the default policy and poll. */
    public Simulator(OverheadModel model, BackfillSettings backfillSettings) {
        this(model, backfillSettings, TrackerSettings.DEFAULTS);
    }

    public Simulator(OverheadModel model, BackfillSettings backfillSettings, TrackerSettings tracker) {
        this.model = Objects.requireNonNull(model, "model");
        this.backfillSettings = Objects.requireNonNull(backfillSettings, "backfillSettings");
        this.tracker = Objects.requireNonNull(tracker, "tracker");
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
        int mostGpus = workload.nodes().stream().mapToInt(SimNode::gpus).max().orElse(0);
        // mostCpus[g]: the most CPUs of a node with at least g GPUs, so each job is checked without a scan of nodes
        int[] mostCpus = new int[mostGpus + 1];
        for (SimNode node : workload.nodes()) {
            for (int gpus = 0; gpus <= node.gpus(); gpus++) {
                mostCpus[gpus] = Math.max(mostCpus[gpus], node.cpus());
            }
        }
        for (SimJob job : workload.jobs()) {
            if (job.gpus() > mostGpus || mostCpus[job.gpus()] < job.cpus()) {
                throw new IllegalArgumentException("job " + job.id() + " asks " + job.gpus() + " GPUs and " + job.cpus()
                        + " CPUs on one node, and no node of " + workload.source()
                        + " has that many: Slurm would reject it at submission");
            }
        }
        return new Simulation(workload, policy, model, backfillSettings, tracker, progress).run();
    }
}
