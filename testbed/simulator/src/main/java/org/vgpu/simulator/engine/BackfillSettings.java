package org.vgpu.simulator.engine;

/**
 * When Slurm's backfill runs, and whom it protects. Slurm's main scheduler starts jobs in priority order whenever a job ends or arrives,
 * and stops at the first job that cannot start; only its backfill scheduler starts a job past that one, and it runs
 * every {@code bf_interval} seconds (30 by default), not at every event. With an interval of 0 the simulation
 * backfills at every pass; otherwise a job that only backfill would start waits for the next backfill cycle, at
 * {@code phase + k × interval} seconds from the workload's start. EASY backfill reserves for the first waiting job
 * only; Slurm's backfill scheduler gives every job it tests a reservation ({@link ReservationPlan}).
 *
 * @param backfillIntervalSeconds Slurm's {@code bf_interval}, or 0 to backfill at every pass
 * @param backfillPhaseSeconds a moment (from the workload's start) at which a backfill cycle ran
 * @param reserveEveryJob whether each waiting job a backfill cycle tests gets a reservation (Slurm's), or the first
 *     one alone (EASY)
 */
public record BackfillSettings(double backfillIntervalSeconds, double backfillPhaseSeconds, boolean reserveEveryJob) {
    /** EASY backfill at every scheduling pass, as if {@code bf_interval} were 0. */
    public static final BackfillSettings EASY_EVERY_PASS = new BackfillSettings(0, 0, false);

    /** How close two instants must be to count as one: the event queue's times are sums of doubles. */
    private static final double SAME_INSTANT = 1e-6;

    public BackfillSettings {
        if (!(backfillIntervalSeconds >= 0) || Double.isInfinite(backfillIntervalSeconds)) {
            throw new IllegalArgumentException(
                    "the backfill interval is a number of seconds >= 0, got " + backfillIntervalSeconds);
        }
        if (!Double.isFinite(backfillPhaseSeconds)) {
            throw new IllegalArgumentException(
                    "the backfill phase is a number of seconds, got " + backfillPhaseSeconds);
        }
    }

    /** Whether a backfill cycle runs at {@code now}. */
    boolean backfillsAt(double now) {
        if (backfillIntervalSeconds == 0) {
            return true;
        }
        double sinceCycle = sinceLastCycle(now);
        return sinceCycle < SAME_INSTANT || backfillIntervalSeconds - sinceCycle < SAME_INSTANT;
    }

    /** The first backfill cycle after {@code now}. */
    double nextBackfillAfter(double now) {
        return now - sinceLastCycle(now) + backfillIntervalSeconds;
    }

    private double sinceLastCycle(double now) {
        double offset = now - backfillPhaseSeconds;
        return offset - backfillIntervalSeconds * Math.floor(offset / backfillIntervalSeconds);
    }
}
