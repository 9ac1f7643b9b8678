package org.vgpu.simulator.engine;

import java.util.Comparator;
import java.util.PriorityQueue;

/**
 * The simulation's future: events by time, and at one time by kind (releases before arrivals, so a job that ends
 * when another is submitted frees its GPUs first), then in the order they were scheduled, so runs repeat exactly.
 */
final class EventQueue {
    /** What happens; the order of the constants is the order at one instant. */
    enum Kind {
        /** A job ends (done, or killed at its time limit). */
        END,
        /** A move home has finished: the lender's GPU is free again. */
        MIGRATION_DONE,
        /** A job is submitted. */
        SUBMIT,
        /** Idle GPUs have become lendable (their grace is over), or the tracker's next poll is due: a pass. */
        WAKE,
        /**
         * The hook looks at the jobs of one node after a GPU there was freed; after that instant's scheduling pass,
         * so that Slurm gets the first pick of a freed GPU even when the hook's latency is zero.
         */
        HOOK
    }

    /**
     * @param job the job's index in the workload, or -1
     * @param node the node's index, or -1
     * @param version for {@link Kind#END}: the job's version when scheduled; a later reschedule makes it stale
     */
    record Event(double time, Kind kind, long sequence, int job, int node, int version) {}

    private final PriorityQueue<Event> events = new PriorityQueue<>(
            Comparator.comparingDouble(Event::time).thenComparing(Event::kind).thenComparingLong(Event::sequence));
    private long sequence;

    void add(double time, Kind kind, int job, int node, int version) {
        events.add(new Event(time, kind, sequence++, job, node, version));
    }

    boolean isEmpty() {
        return events.isEmpty();
    }

    /** The time of the next event; {@link Double#POSITIVE_INFINITY} when there is none. */
    double nextTime() {
        Event next = events.peek();
        return next == null ? Double.POSITIVE_INFINITY : next.time();
    }

    /** Whether the next event is at {@code time} and comes before that instant's scheduling pass. */
    boolean beforePassAt(double time) {
        Event next = events.peek();
        return next != null && next.time() == time && next.kind() != Kind.HOOK;
    }

    Event poll() {
        return events.remove();
    }
}
