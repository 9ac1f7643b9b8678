package org.vgpu.siteconfig;

import java.time.Duration;
import java.util.Objects;

/**
 * How the tracker lends GPUs.
 *
 * @param idleGrace           how long a GPU must have been idle before it may be lent, so Slurm's own
 *                            scheduler gets the first pick of a freshly released GPU
 * @param maxBorrowedPerJob   the most GPUs one job may borrow from other nodes
 * @param borrowing           off: vgpu jobs wait until their node has enough idle GPUs of its own
 * @param fallbackLocalOnly   on: when the tracker cannot secure borrowed GPUs (tracker or lender down), a
 *                            vgpu job whose node has enough idle GPUs starts on local GPUs only instead of waiting
 * @param migration           when borrowed vGPUs move onto a GPU of their job's node that frees up
 */
public record Policy(
        Duration idleGrace,
        int maxBorrowedPerJob,
        boolean borrowing,
        boolean fallbackLocalOnly,
        MigrationPolicy migration) {
    public static final Duration DEFAULT_IDLE_GRACE = ConfigKeys.IDLE_GRACE.defaultValue();
    public static final int DEFAULT_MAX_BORROWED_PER_JOB = ConfigKeys.MAX_BORROWED_PER_JOB.defaultValue();

    public Policy {
        Objects.requireNonNull(idleGrace, "idleGrace");
        Objects.requireNonNull(migration, "migration");
        if (idleGrace.isNegative() || maxBorrowedPerJob < 0) {
            throw new IllegalArgumentException("idleGrace and maxBorrowedPerJob must not be negative");
        }
    }

    /** A lending policy with the default migration policy. */
    public Policy(Duration idleGrace, int maxBorrowedPerJob, boolean borrowing, boolean fallbackLocalOnly) {
        this(idleGrace, maxBorrowedPerJob, borrowing, fallbackLocalOnly, MigrationPolicy.defaults());
    }

    /** The policy of a file without a [policy] section. */
    public static Policy defaults() {
        return new Policy(
                DEFAULT_IDLE_GRACE,
                DEFAULT_MAX_BORROWED_PER_JOB,
                ConfigKeys.BORROWING.defaultValue(),
                ConfigKeys.FALLBACK_LOCAL_ONLY.defaultValue());
    }
}
