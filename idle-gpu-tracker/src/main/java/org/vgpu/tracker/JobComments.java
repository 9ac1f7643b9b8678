package org.vgpu.tracker;

import java.util.Collection;
import java.util.HashMap;
import java.util.Map;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.tracker.slurm.SlurmControl;

/**
 * What the tracker tells each job through its Slurm comment ({@code vgpu: } and why it waits, where it was assembled,
 * which vGPU was lost), written only when it changes. Guarded by the tracker's lock.
 */
final class JobComments {
    /** The tracker's log lines keep the one logger name admins filter on. */
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    private static final String PREFIX = "vgpu: ";

    private final SlurmControl slurm;
    /** The comment last written to each job, so it is rewritten only on change. */
    private final Map<Long, String> written = new HashMap<>();

    JobComments(SlurmControl slurm) {
        this.slurm = slurm;
    }

    /** Sets the job's comment to {@code text} unless it says that already; a Slurm failure is logged, not thrown. */
    void set(long job, String text) {
        String comment = PREFIX + text;
        if (comment.equals(written.get(job))) {
            return;
        }
        try {
            slurm.comment(job, comment);
            written.put(job, comment);
        } catch (RuntimeException e) {
            LOG.warn("job {}: cannot set its comment: {}", job, e.getMessage());
        }
    }

    /** Forgets what was written to a job that ended. */
    void forget(long job) {
        written.remove(job);
    }

    /** Forgets what was written to every job but {@code active}. */
    void keepOnly(Collection<Long> active) {
        written.keySet().retainAll(active);
    }
}
