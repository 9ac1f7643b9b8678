package org.vgpu.simulator.engine;

import java.util.Iterator;
import java.util.Optional;
import java.util.SequencedSet;

import org.vgpu.simulator.workload.SimJob;

/**
 * Slurm's own scheduling pass over the waiting jobs, in priority order (here: submit order, as with equal
 * priorities): jobs start while they fit on one node (all their GPUs there, as {@code --gres=gpu:N}, best fit); the
 * first that does not gets a reservation, and the jobs after it start only where EASY backfill allows (see {@link
 * Reservation}). Like Slurm's {@code bf_max_job_test}, a pass looks at the first {@link #WINDOW} waiting jobs only.
 * A pass without backfill (Slurm's main scheduler between backfill cycles) stops at that first job; a backfill
 * cycle that reserves for every job (Slurm's backfill scheduler) is a {@link ReservationPlan}'s.
 */
final class BackfillScheduler {
    /** How many waiting jobs one pass looks at. */
    static final int WINDOW = 100;

    /** Starts a job on a node Slurm chose for it. */
    interface Starter {
        void start(int job, NodeState node);
    }

    private final SimJob[] jobs;

    BackfillScheduler(SimJob[] jobs) {
        this.jobs = jobs;
    }

    /**
     * Starts what Slurm would start now, removing it from {@code waiting}; with {@code backfill} false, only the jobs
     * before the first that cannot start.
     *
     * @return whether jobs after one that could not start were left for a backfill cycle (only without backfill)
     */
    boolean pass(
            double now,
            Cluster cluster,
            SequencedSet<Integer> waiting,
            boolean backfill,
            boolean reserveEveryJob,
            Starter starter) {
        if (backfill && reserveEveryJob) {
            reservingEveryJob(now, cluster, waiting, starter);
            return false;
        }
        Reservation reservation = null;
        SimJob head = null;
        int looked = 0;
        for (Iterator<Integer> it = waiting.iterator(); it.hasNext() && looked < WINDOW; looked++) {
            if (cluster.mostFreeGpus() == 0) {
                return false;
            }
            int index = it.next();
            SimJob job = jobs[index];
            Optional<NodeState> node;
            if (head == null) {
                node = cluster.bestFit(job.gpus(), job.cpus(), null);
                if (node.isEmpty()) {
                    head = job;
                }
            } else {
                if (!backfill) {
                    return true;
                }
                if (reservation == null) {
                    if (cluster.bestFit(job.gpus(), job.cpus(), null).isEmpty()) {
                        continue;
                    }
                    reservation = Reservation.of(head, cluster, now);
                }
                node = reservation.place(job, cluster, now);
            }
            if (node.isPresent()) {
                it.remove();
                starter.start(index, node.get());
            }
        }
        return false;
    }

    /** A backfill cycle as Slurm's backfill scheduler runs it: a reservation for each job that cannot start now. */
    private void reservingEveryJob(double now, Cluster cluster, SequencedSet<Integer> waiting, Starter starter) {
        ReservationPlan plan = new ReservationPlan(cluster, now);
        int looked = 0;
        for (Iterator<Integer> it = waiting.iterator(); it.hasNext() && looked < WINDOW; looked++) {
            if (cluster.mostFreeGpus() == 0) {
                return;
            }
            int index = it.next();
            NodeState node = plan.startOrReserve(jobs[index]);
            if (node != null) {
                it.remove();
                starter.start(index, node);
            }
        }
    }
}
