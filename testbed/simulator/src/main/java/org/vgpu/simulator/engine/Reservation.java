package org.vgpu.simulator.engine;

import java.util.Optional;

import org.vgpu.simulator.workload.SimJob;

/**
 * EASY backfill's promise to the first waiting job: the node and the earliest time it will have the job's GPUs and
 * CPUs, if every running job runs to its time limit; and what that node has to spare then. A later job may start now
 * if it ends before that time, or runs elsewhere, or fits in what the node has to spare.
 */
final class Reservation {
    private final double shadowTime;
    private final NodeState node;
    private int spareGpus;
    private int spareCpus;

    private Reservation(double shadowTime, NodeState node, int spareGpus, int spareCpus) {
        this.shadowTime = shadowTime;
        this.node = node;
        this.spareGpus = spareGpus;
        this.spareCpus = spareCpus;
    }

    /** The reservation of {@code head}, which cannot start now; without a node when no node can ever hold it. */
    static Reservation of(SimJob head, Cluster cluster, double now) {
        double best = Double.POSITIVE_INFINITY;
        NodeState bestNode = null;
        int spareGpus = 0;
        int spareCpus = 0;
        for (int i = 0; i < cluster.size(); i++) {
            NodeState candidate = cluster.node(i);
            if (candidate.node.gpus() < head.gpus() || candidate.node.cpus() < head.cpus()) {
                continue;
            }
            int gpus = candidate.freeGpuCount();
            int cpus = candidate.freeCpus;
            double time = now;
            if (gpus < head.gpus() || cpus < head.cpus()) {
                for (Hold hold : candidate.holds) {
                    gpus += hold.gpus;
                    cpus += hold.cpus;
                    time = Math.max(now, hold.job.limitEnd());
                    if ((gpus >= head.gpus() && cpus >= head.cpus()) || time >= best) {
                        break;
                    }
                }
            }
            if (gpus >= head.gpus() && cpus >= head.cpus() && time < best) {
                best = time;
                bestNode = candidate;
                spareGpus = gpus - head.gpus();
                spareCpus = cpus - head.cpus();
            }
        }
        return new Reservation(best, bestNode, spareGpus, spareCpus);
    }

    /**
     * A node where {@code job} may start now without delaying this reservation, best fit; taking from what the
     * reserved node has to spare when it goes there past the reserved time.
     */
    Optional<NodeState> place(SimJob job, Cluster cluster, double now) {
        if (node == null || now + job.timeLimitSeconds() <= shadowTime) {
            return cluster.bestFit(job.gpus(), job.cpus(), null);
        }
        Optional<NodeState> elsewhere = cluster.bestFit(job.gpus(), job.cpus(), node);
        if (elsewhere.isPresent()) {
            return elsewhere;
        }
        if (spareGpus >= job.gpus() && spareCpus >= job.cpus() && node.fits(job.gpus(), job.cpus())) {
            spareGpus -= job.gpus();
            spareCpus -= job.cpus();
            return Optional.of(node);
        }
        return Optional.empty();
    }
}
