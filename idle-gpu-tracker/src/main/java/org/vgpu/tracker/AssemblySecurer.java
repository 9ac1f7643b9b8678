package org.vgpu.tracker;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.security.SiteKey;
import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.cluster.ClusterView;
import org.vgpu.tracker.cluster.IdleClock;
import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.placement.AssemblyPlanner;
import org.vgpu.tracker.placement.Availability;
import org.vgpu.tracker.placement.Placement;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * Turns held vgpu jobs into released ones: plans each held job without an assembly (oldest first, on what is free
 * once the promises Slurm does not show yet are taken), records the plan, and secures it tick by tick — holders
 * submitted, their GPUs learned, then the job pinned and released — or gives it up (the job stays held and is planned
 * again) when a holder fails or the holders and their workers take too long. The ledger is written before Slurm is
 * changed. Guarded by the tracker's lock.
 */
final class AssemblySecurer {
    /** The tracker's log lines keep the one logger name admins filter on. */
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    private final SiteConfig site;
    private final SlurmControl slurm;
    private final Ledger ledger;
    /** The site key, from which each holder's worker gets the key of its one lend. */
    private final SiteKey key;

    private final Tracker.Settings settings;
    private final MigrationHook hook;
    private final Reconciliation reconciliation;
    private final JobComments comments;
    private final AssemblyPlanner planner;
    private final IdleClock idleClock = new IdleClock();
    /** Held vgpu jobs without an assembly, and why, by job id. */
    private final Map<Long, StatusReport.Waiting> waiting = new TreeMap<>();

    AssemblySecurer(
            SiteConfig site,
            SlurmControl slurm,
            Ledger ledger,
            SiteKey key,
            Tracker.Settings settings,
            MigrationHook hook,
            Reconciliation reconciliation,
            JobComments comments) {
        this.site = site;
        this.slurm = slurm;
        this.ledger = ledger;
        this.key = key;
        this.settings = settings;
        this.hook = hook;
        this.reconciliation = reconciliation;
        this.comments = comments;
        this.planner = new AssemblyPlanner(site.policy(), site.distances(), site.lendPartition());
    }

    /** Held vgpu jobs without an assembly and why each waits, by job id. */
    List<StatusReport.Waiting> waiting() {
        return List.copyOf(waiting.values());
    }

    /** Moves an assembly being secured forward: holders submitted, their GPUs learned, then the job pinned and released. */
    void secure(Assembly start, SlurmInventory inventory, Instant now) {
        Assembly assembly = start;
        Optional<SlurmJob> job = inventory.job(assembly.job());
        if (job.isEmpty()) {
            return;
        }
        boolean allRunning = true;
        for (Lend lend : assembly.lends()) {
            if (lend.holder().isEmpty()) {
                long holder = slurm.submitHolder(
                        lend.node(), assembly.job(), lend.vgpu(), holderScript(assembly.job(), lend));
                LOG.info(
                        "job {}: holder {} submitted for a GPU of {} (vGPU {})",
                        assembly.job(),
                        holder,
                        lend.node(),
                        lend.vgpu());
                assembly = assembly.withLend(lend.withHolder(holder));
                ledger.record(assembly);
                allRunning = false;
                continue;
            }
            if (lend.gpu().isPresent()) {
                allRunning &= lend.worker().isPresent();
                continue;
            }
            Optional<SlurmJob> holder = inventory.job(lend.holder().getAsLong());
            if (holder.isEmpty()
                    || holder.get().state().equals("PENDING")
                    || holder.get().state().equals("CONFIGURING")) {
                allRunning = false;
                continue;
            }
            if (!holder.get().state().equals("RUNNING")) {
                LOG.warn(
                        "holder job {} on {} ended {} before its worker served job {}; {}",
                        lend.holder().getAsLong(),
                        lend.node(),
                        holder.get().state(),
                        assembly.job(),
                        slurm.holderOutput().of(lend.holder().getAsLong(), lend.node()));
                abort(
                        assembly,
                        "holder job " + lend.holder().getAsLong() + " on " + lend.node() + " is "
                                + holder.get().state());
                return;
            }
            List<Integer> gpu = holder.get().gpuIndicesOn(lend.node());
            if (gpu.size() != 1) {
                abort(
                        assembly,
                        "holder job " + lend.holder().getAsLong() + " on " + lend.node() + " holds GPU(s) " + gpu
                                + ", expected exactly one");
                return;
            }
            // The worker may have announced itself before this look at Slurm: keep it.
            Lend current = assembly.lends().get(lend.vgpu() - assembly.localGpus());
            assembly = assembly.withLend(current.withGpu(gpu.getFirst()));
            ledger.record(assembly);
            allRunning &= current.worker().isPresent();
        }
        if (!allRunning) {
            if (Duration.between(assembly.planned(), now).compareTo(settings.holderTimeout()) > 0) {
                abort(
                        assembly,
                        "holder jobs and their workers did not start within "
                                + settings.holderTimeout().toSeconds() + " s");
            }
            return;
        }
        if (!job.get().held()) {
            // Released already: by this tracker just before it stopped (the ledger missed it), or by hand.
            LOG.info("job {} was released before the ledger said so; its assembly is complete", assembly.job());
        } else {
            slurm.pin(assembly.job(), assembly.node(), assembly.localGpus(), assembly.vgpus());
            slurm.release(assembly.job());
        }
        ledger.record(assembly.releasedAt(now));
        String borrowed = assembly.lends().stream()
                .map(lend -> lend.node() + ":" + lend.gpu().orElseThrow())
                .toList()
                .toString();
        LOG.info(
                "job {} released on {}: {} local GPU(s), borrowed {}",
                assembly.job(),
                assembly.node(),
                assembly.localGpus(),
                borrowed);
        comments.set(
                assembly.job(),
                "assembled on " + assembly.node() + ": " + assembly.localGpus() + " local GPU(s), "
                        + assembly.lends().size() + " borrowed " + borrowed);
    }

    /** Gives an assembly up before its job was released: holders cancelled, the job stays held and is planned again. */
    private void abort(Assembly assembly, String why) {
        LOG.warn(
                "job {}: giving up its assembly ({}); cancelling holder(s) {}",
                assembly.job(),
                why,
                assembly.holders());
        reconciliation.close(assembly, "aborted", Optional.of(why));
        comments.set(assembly.job(), "assembly given up, planning again: " + why);
    }

    /** Plans the held vgpu jobs without an assembly, oldest first, and starts securing each planned one. */
    void planHeldJobs(SlurmInventory inventory, Instant now) {
        List<SlurmJob> held = inventory.jobs().stream()
                .filter(job -> job.held()
                        && job.asksForVgpu()
                        && ledger.assembly(job.id()).isEmpty())
                .sorted(Comparator.comparingLong(SlurmJob::id))
                .toList();
        waiting.keySet().retainAll(held.stream().map(SlurmJob::id).toList());
        // A held job cancelled before it was assembled never has its assembly ended: drop its last comment here.
        comments.keepOnly(inventory.jobs().stream()
                .filter(SlurmJob::active)
                .map(SlurmJob::id)
                .toList());
        if (held.isEmpty()) {
            return;
        }
        Availability free = new Availability(
                ClusterView.of(inventory, site, idleClock, now), site.policy().idleGrace());
        reserveWhatSlurmDoesNotShowYet(free, inventory);
        hook.reserve(free, inventory);
        for (SlurmJob job : held) {
            Placement placement = planner.plan(job, free);
            switch (placement) {
                case Placement.Plan plan -> {
                    waiting.remove(job.id());
                    List<Lend> lends = new ArrayList<>();
                    for (int i = 0; i < plan.lenders().size(); i++) {
                        lends.add(Lend.planned(
                                plan.localGpus() + i, plan.lenders().get(i)));
                    }
                    Assembly assembly = new Assembly(
                            job.id(),
                            job.user(),
                            plan.node(),
                            plan.vgpus(),
                            plan.localGpus(),
                            Assembly.Phase.SECURING,
                            now,
                            Optional.empty(),
                            lends);
                    ledger.record(assembly);
                    LOG.info(
                            "job {} ({} vGPUs): planned on {} with {} local GPU(s), borrowing from {}",
                            job.id(),
                            plan.vgpus(),
                            plan.node(),
                            plan.localGpus(),
                            plan.lenders());
                    secure(assembly, inventory, now);
                }
                case Placement.Wait wait -> {
                    int vgpus = job.requestedPerNode().getOrDefault(SlurmJob.VGPU, 0);
                    StatusReport.Waiting previous =
                            waiting.put(job.id(), new StatusReport.Waiting(job.id(), job.user(), vgpus, wait.reason()));
                    if (previous == null || !previous.reason().equals(wait.reason())) {
                        LOG.info("job {} ({} vGPUs) waits: {}", job.id(), vgpus, wait.reason());
                    }
                    comments.set(job.id(), wait.reason());
                }
            }
        }
    }

    /**
     * Takes from {@code free} what live assemblies were promised but Slurm does not show as taken:
     * GPUs of holders not running yet, and the local GPUs, CPUs and vgpu slots of jobs not started yet.
     */
    private void reserveWhatSlurmDoesNotShowYet(Availability free, SlurmInventory inventory) {
        for (Assembly assembly : ledger.assemblies()) {
            for (Lend lend : assembly.lends()) {
                boolean holderRuns = lend.holder().isPresent()
                        && inventory
                                .job(lend.holder().getAsLong())
                                .map(job -> job.state().equals("RUNNING"))
                                .orElse(false);
                if (!holderRuns) {
                    free.node(lend.node()).ifPresent(Availability.Node::takeForLend);
                }
            }
            Optional<SlurmJob> job = inventory.job(assembly.job());
            if (job.isPresent() && job.get().state().equals("PENDING")) {
                free.node(assembly.node())
                        .ifPresent(node ->
                                node.takeForJob(assembly.localGpus(), job.get().cpus(), assembly.vgpus()));
            }
        }
    }

    /** What a holder runs for {@code lend} of {@code job}: see {@link HolderScript}. */
    String holderScript(long job, Lend lend) {
        NodeConfig node = site.node(lend.node())
                .orElseThrow(
                        () -> new IllegalStateException("node " + lend.node() + " is not in the site configuration"));
        return new HolderScript(
                        site.slurm().vgpuCommand(),
                        site.tracker(),
                        settings.workerBackend(),
                        settings.workerIdleTimeout(),
                        site.workerTls())
                .forLend(
                        lend.node(),
                        node.reachableAs(),
                        job,
                        lend.vgpu(),
                        key.forLend(Long.toString(job), lend.vgpu()));
    }
}
