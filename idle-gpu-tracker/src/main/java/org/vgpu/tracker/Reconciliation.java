package org.vgpu.tracker;

import java.time.Clock;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * Brings the ledger and Slurm to agree, first in every tick: ends the assemblies of jobs that are done (their batch
 * step ended), gone or ended (cancelling their holders), then cancels holder jobs that no live assembly or grant
 * names. Since the ledger is written before Slurm is changed, a tracker killed at any point finds on restart either
 * what it did or what it was about to do, and its first tick reconciles the two here: a holder submitted but never
 * recorded is cancelled as unknown, the assembly of a job that ended meanwhile is ended.
 *
 * <p>Every assembly ends here ({@link #close}), also one given up while being secured, and leaves an {@code ended} line
 * for {@code vgpu report}. {@link #done} comes from the bridge's threads; the rest is guarded by the tracker's lock.
 */
final class Reconciliation {
    /** The tracker's log lines keep the one logger name admins filter on. */
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    private static final int HISTORY_LINES = 200;

    private final Ledger ledger;
    private final MigrationHook hook;
    private final HolderBook holders;
    private final JobComments comments;
    private final Clock clock;
    private final Set<Long> doneJobs = ConcurrentHashMap.newKeySet();
    /** Assemblies that ended, newest last. */
    private final Deque<StatusReport.Ended> history = new ArrayDeque<>();
    /** How many assemblies ended since this tracker started, by why (for /metrics). */
    private final Map<String, Long> endedTotals = new TreeMap<>();

    Reconciliation(Ledger ledger, MigrationHook hook, HolderBook holders, JobComments comments, Clock clock) {
        this.ledger = ledger;
        this.hook = hook;
        this.holders = holders;
        this.comments = comments;
        this.clock = clock;
    }

    /** Notes that a job's batch step ended: the next reconciliation ends its assembly. Any thread. */
    void done(long job) {
        doneJobs.add(job);
    }

    /** Whether a {@code done} arrived that the next reconciliation has to act on. Any thread. */
    boolean hasPendingDone() {
        return !doneJobs.isEmpty();
    }

    /** Ends the assemblies of jobs that ended, then cancels the holders nothing names (see the class comment). */
    void reconcile(SlurmInventory inventory) {
        endAssembliesOfEndedJobs(inventory);
        holders.cancelUnknown(inventory, hook.grants());
    }

    private void endAssembliesOfEndedJobs(SlurmInventory inventory) {
        Set<Long> done = new HashSet<>(doneJobs);
        for (Assembly assembly : ledger.assemblies()) {
            Optional<SlurmJob> job = inventory.job(assembly.job());
            if (done.contains(assembly.job())) {
                end(assembly, "done", "its batch step ended");
            } else if (job.isEmpty()) {
                end(assembly, "gone", "Slurm no longer knows the job");
            } else if (!job.get().active()) {
                end(assembly, "ended", "the job is " + job.get().state());
            }
        }
        doneJobs.removeAll(done);
    }

    private void end(Assembly assembly, String why, String explanation) {
        LOG.info(
                "job {}: {}; cancelling holder(s) {} and ending its assembly",
                assembly.job(),
                explanation,
                assembly.holders());
        close(assembly, why, Optional.empty());
        comments.forget(assembly.job());
    }

    /** Cancels an assembly's holders, forgets it in the ledger and keeps an {@code ended} line for {@code vgpu report}. */
    void close(Assembly assembly, String why, Optional<String> reason) {
        hook.endJob(assembly.job(), clock.instant());
        holders.cancel(assembly);
        ledger.forget(assembly.job(), why);
        holders.forget(assembly);
        remember(new StatusReport.Ended(
                assembly.job(),
                assembly.user(),
                assembly.node(),
                assembly.vgpus(),
                assembly.lends().size(),
                why,
                clock.instant(),
                reason));
    }

    private void remember(StatusReport.Ended ended) {
        endedTotals.merge(ended.why(), 1L, Long::sum);
        history.addLast(ended);
        while (history.size() > HISTORY_LINES) {
            history.removeFirst();
        }
    }

    /** The assemblies that ended lately, oldest first. */
    List<StatusReport.Ended> history() {
        return List.copyOf(history);
    }

    /** How many assemblies ended since this tracker started, by why. */
    Map<String, Long> endedTotals() {
        return endedTotals;
    }
}
