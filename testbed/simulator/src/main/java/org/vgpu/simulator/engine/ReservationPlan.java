package org.vgpu.simulator.engine;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.vgpu.simulator.workload.SimJob;

/**
 * Slurm's backfill cycle as its backfill scheduler runs it: every job it tests that cannot start now gets a
 * reservation (the node and the earliest time that node holds it for its whole time limit, if every running job runs
 * to its limit and every earlier reservation is kept), and a later job starts now only where it delays none of them.
 * EASY backfill ({@link Reservation}) protects the first waiting job alone. One plan serves one pass.
 */
final class ReservationPlan {
    /** GPUs and CPUs a reservation takes on a node from {@code start} until {@code end}. */
    private record Use(double start, double end, int gpus, int cpus) {}

    private final Cluster cluster;
    private final double now;
    private final List<List<Use>> uses = new ArrayList<>();

    ReservationPlan(Cluster cluster, double now) {
        this.cluster = cluster;
        this.now = now;
        for (int i = 0; i < cluster.size(); i++) {
            uses.add(new ArrayList<>());
        }
    }

    /**
     * Where {@code job} starts now without delaying a reservation (best fit: the fewest free GPUs, ties to the lowest
     * index; the caller starts it there at once); or, when no node can take it now, its reservation booked and null
     * returned.
     */
    NodeState startOrReserve(SimJob job) {
        NodeState startNow = null;
        NodeState earliestNode = null;
        double earliest = Double.POSITIVE_INFINITY;
        for (int i = 0; i < cluster.size(); i++) {
            NodeState node = cluster.node(i);
            if (node.node.gpus() < job.gpus() || node.node.cpus() < job.cpus()) {
                continue;
            }
            double start = earliestStart(node, job);
            if (start <= now) {
                if (startNow == null || node.freeGpuCount() < startNow.freeGpuCount()) {
                    startNow = node;
                }
            } else if (start < earliest) {
                earliest = start;
                earliestNode = node;
            }
        }
        if (startNow != null) {
            // once started, the job is the node's: its GPUs are taken and its hold ends at its limit
            return startNow;
        }
        if (earliestNode != null) {
            uses.get(earliestNode.index)
                    .add(new Use(earliest, earliest + job.timeLimitSeconds(), job.gpus(), job.cpus()));
        }
        return null;
    }

    /** The earliest time from now on that {@code node} has the job's GPUs and CPUs for its whole time limit. */
    private double earliestStart(NodeState node, SimJob job) {
        TreeSet<Double> candidates = new TreeSet<>();
        candidates.add(now);
        for (Hold hold : node.holds) {
            candidates.add(Math.max(now, hold.job.limitEnd()));
        }
        for (Use use : uses.get(node.index)) {
            candidates.add(Math.max(now, use.end()));
        }
        for (double start : candidates) {
            if (holdsFrom(node, job, start)) {
                return start;
            }
        }
        return Double.POSITIVE_INFINITY;
    }

    /**
     * Whether the node has the job's GPUs and CPUs from {@code start} to the end of its limit: what is free only
     * shrinks where a booked use begins, so it is checked at the start and at each such beginning within.
     */
    private boolean holdsFrom(NodeState node, SimJob job, double start) {
        double end = start + job.timeLimitSeconds();
        if (!freeAt(node, job, start)) {
            return false;
        }
        for (Use use : uses.get(node.index)) {
            if (use.start() > start && use.start() < end && !freeAt(node, job, use.start())) {
                return false;
            }
        }
        return true;
    }

    private boolean freeAt(NodeState node, SimJob job, double time) {
        int gpus = node.freeGpuCount();
        int cpus = node.freeCpus;
        for (Hold hold : node.holds) {
            if (hold.job.limitEnd() <= time) {
                gpus += hold.gpus;
                cpus += hold.cpus;
            }
        }
        for (Use use : uses.get(node.index)) {
            if (use.start() <= time && time < use.end()) {
                gpus -= use.gpus();
                cpus -= use.cpus();
            }
        }
        return gpus >= job.gpus() && cpus >= job.cpus();
    }
}
