package org.vgpu.tracker;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * The tracker's account of holder jobs beyond what the ledger records: the holders it cancelled (which Slurm may
 * still list as active for a moment), holders of live assemblies that ended under them (their GPUs no longer kept),
 * holders whose vGPU is being evacuated (their end expected), and why each vGPU that died with its holder is lost.
 * It cancels holders: an assembly's, and those no live assembly or grant names. Guarded by the tracker's lock.
 */
final class HolderBook {
    /** The tracker's log lines keep the one logger name admins filter on. */
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    private final SlurmControl slurm;
    private final Ledger ledger;
    private final JobComments comments;
    private final String lendPartition;
    /** Holders of live assemblies that Slurm shows ended: those GPUs are no longer kept. */
    private final Set<Long> lostHolders = new HashSet<>();
    /**
     * Holders whose worker left and whose vGPU is being evacuated: their end is expected, not a loss (an evacuation
     * that fails says so itself).
     */
    private final Set<Long> evacuatedHolders = new HashSet<>();
    /** Why each vGPU that dies with its cancelled holder is lost, by job and vGPU. */
    private final Map<Long, Map<Integer, String>> lostVgpus = new HashMap<>();
    /** Holders this tracker cancelled, which Slurm may still list as active for a moment. */
    private final Set<Long> cancelledHolders = new HashSet<>();

    HolderBook(SlurmControl slurm, Ledger ledger, JobComments comments, String lendPartition) {
        this.slurm = slurm;
        this.ledger = ledger;
        this.comments = comments;
        this.lendPartition = lendPartition;
    }

    /** Ends an assembly's lends: its holders are cancelled, which stops the workers they run. */
    void cancel(Assembly assembly) {
        slurm.cancel(assembly.holders());
        cancelledHolders.addAll(assembly.holders());
    }

    /** Notes a holder cancelled elsewhere (by the migration hook), so it is not taken for unknown meanwhile. */
    void cancelled(long holder) {
        cancelledHolders.add(holder);
    }

    /** Notes a holder whose vGPU is being evacuated: its end is no loss. */
    void evacuating(long holder) {
        evacuatedHolders.add(holder);
    }

    /** Forgets what it noted of an assembly that ended. */
    void forget(Assembly assembly) {
        lostHolders.removeAll(assembly.holders());
        evacuatedHolders.removeAll(assembly.holders());
        lostVgpus.remove(assembly.job());
    }

    /**
     * Holder jobs (lend partition, holder name) that neither a live assembly nor one of the hook's {@code grants}
     * names: left by a crash or a hand; cancelled.
     */
    void cancelUnknown(SlurmInventory inventory, Collection<Long> grants) {
        Set<Long> known = new HashSet<>(grants);
        ledger.assemblies().forEach(assembly -> known.addAll(assembly.holders()));
        List<Long> unknown = inventory.jobs().stream()
                .filter(job -> job.partition().equals(lendPartition))
                .filter(job -> job.name().startsWith(SlurmControl.HOLDER_NAME_PREFIX)
                        || job.name().startsWith(SlurmControl.GRANT_NAME_PREFIX))
                .filter(SlurmJob::active)
                .map(SlurmJob::id)
                .filter(id -> !known.contains(id) && !cancelledHolders.contains(id))
                .toList();
        cancelledHolders.retainAll(inventory.jobs().stream()
                .filter(SlurmJob::active)
                .map(SlurmJob::id)
                .toList());
        if (!unknown.isEmpty()) {
            LOG.warn("cancelling holder job(s) {} that the ledger does not know", unknown);
            slurm.cancel(unknown);
        }
    }

    /** Logs, once each, the holders of a live assembly that Slurm shows ended and that no evacuation expects. */
    void noticeLost(Assembly assembly, SlurmInventory inventory) {
        for (long holder : assembly.holders()) {
            Optional<SlurmJob> job = inventory.job(holder);
            boolean running = job.isPresent() && job.get().active();
            if (!running && !evacuatedHolders.contains(holder) && lostHolders.add(holder)) {
                LOG.error(
                        "job {}: holder job {} has ended ({}); Slurm no longer keeps that borrowed GPU for it{}",
                        assembly.job(),
                        holder,
                        job.map(SlurmJob::state).orElse("gone"),
                        assembly.lends().stream()
                                .filter(lend -> lend.holder().equals(OptionalLong.of(holder)))
                                .flatMap(lend -> lend.servedBy().stream())
                                .map(worker -> " (its " + worker + ")")
                                .findFirst()
                                .orElse(""));
            }
        }
    }

    /** A vGPU that dies with its holder: the job's comment, the log at ERROR, the report. */
    void vgpuLost(MigrationHook.Lost lost) {
        ledger.assembly(lost.job())
                .flatMap(assembly -> assembly.lends().stream()
                        .filter(lend -> lend.vgpu() == lost.vgpu())
                        .findFirst())
                .ifPresent(lend -> lend.holder().ifPresent(evacuatedHolders::remove));
        lostVgpus.computeIfAbsent(lost.job(), ignored -> new HashMap<>()).put(lost.vgpu(), lost.reason());
        LOG.error("job {}: vGPU {} is lost: {}", lost.job(), lost.vgpu(), lost.reason());
        comments.set(lost.job(), "vGPU " + lost.vgpu() + " LOST: " + lost.reason());
    }

    /** The holders of {@code assembly} that ended under it. */
    List<Long> lostOf(Assembly assembly) {
        return assembly.holders().stream().filter(lostHolders::contains).toList();
    }

    /** Why each lost vGPU of {@code job} is lost, by vGPU. */
    Map<Integer, String> lostVgpus(long job) {
        return lostVgpus.getOrDefault(job, Map.of());
    }
}
