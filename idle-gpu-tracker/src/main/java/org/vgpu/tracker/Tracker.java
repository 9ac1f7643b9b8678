package org.vgpu.tracker;

import static org.vgpu.common.contract.BridgeContract.MOVE_OK;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenIssuer;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.cluster.ClusterView;
import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.hook.MoveRecord;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * The tracker: its tick loop and the requests it answers. Each {@link #tick()} reads Slurm once and then, in this
 * order: reconciles the ledger with Slurm ({@link Reconciliation}: ends the assemblies of jobs that are gone, cancelling
 * their holders, and cancels holder jobs the ledger does not know), moves assemblies being secured forward
 * ({@link AssemblySecurer}: submit holders, learn their GPUs, pin and release the job) and notes holders of live
 * assemblies that ended ({@link HolderBook}), lets the migration hook act, and plans held vgpu jobs that have no
 * assembly yet, oldest first. The ledger is written before Slurm is changed, so a tracker killed at any point finds on
 * restart either what it did or what it was about to do, and the first tick reconciles the two.
 *
 * <p>After securing, each tick moves migrations under way forward and lets the {@link MigrationHook} start a move
 * home where a GPU of a job's node is free and the move pays. A tracker killed mid-migration follows one safe
 * rule on restart: <em>no GPU that the job may be using is ever released on a guess</em>.
 * <ul>
 * <li>An intent without a grant holder (killed before or during sbatch) is given up; a grant holder it may have
 *     submitted has no ledger record and is cancelled as unknown.</li>
 * <li>An intent whose grant holder was submitted but whose command was not sent goes on as if nothing happened:
 *     the agent never heard of it.</li>
 * <li>A sent migration is never sent again. Its outcome comes from the agent's {@code done} (agents report to
 *     whichever tracker answers), or from where the agent's first poll since the restart says the vGPU runs: on
 *     the granted GPU is success (the lender's holder is cancelled), remote is failure (the grant holder is
 *     cancelled). An agent polls only between moves and tells a move's outcome before it polls again, so that
 *     poll is no guess. While the agent says nothing, both holders stay until the job ends.</li>
 * <li>A lend recorded as home whose migration has no outcome yet (killed between the two records) is finished as
 *     success; the lender's holder no assembly names any more is cancelled as unknown.</li>
 * </ul>
 *
 * <p>Requests of the SPANK bridge ({@link #assembly}, {@link #done}), of holders' workers ({@link HolderAnnouncements}),
 * of the jobs' migration agents ({@link AgentRequests}), of admins and {@link #status()} come from other threads; they
 * take the lock only to read or record, never while waiting on Slurm or a lender, except {@link #tick()}'s short Slurm
 * commands.
 */
public final class Tracker {
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);

    /**
     * @param holderTimeout     how long an assembly may take to have every holder running its worker before it is given up
     * @param tokenTtl          how long a session token handed to a job stays valid for opening its session
     * @param workerBackend     what a holder's worker drives: {@code native} (the GPU Slurm gave the holder) or
     *                          {@code emulated} (the CPU emulation, for testbeds without GPUs)
     * @param workerIdleTimeout how long a holder's worker waits for its job's session, and then for each frame of it
     */
    public record Settings(
            Duration holderTimeout,
            Duration tokenTtl,
            String workerBackend,
            Duration workerIdleTimeout,
            MigrationHook.Bounds migration,
            Duration agentHold) {
        public static final MigrationHook.Bounds DEFAULT_MIGRATION_BOUNDS =
                new MigrationHook.Bounds(Duration.ofSeconds(30), Duration.ofMinutes(10));

        public Settings {
            Objects.requireNonNull(migration, "migration");
            Objects.requireNonNull(agentHold, "agentHold");
        }

        /** The hook's bounds and the agents' hold time at their defaults. */
        public Settings(Duration holderTimeout, Duration tokenTtl, String workerBackend, Duration workerIdleTimeout) {
            this(
                    holderTimeout,
                    tokenTtl,
                    workerBackend,
                    workerIdleTimeout,
                    DEFAULT_MIGRATION_BOUNDS,
                    Duration.ofSeconds(AgentChannel.HOLD_SECONDS));
        }

        public static Settings defaults() {
            return new Settings(Duration.ofSeconds(60), Duration.ofHours(24), "native", Duration.ofHours(1));
        }

        public Settings withMigration(MigrationHook.Bounds bounds, Duration hold) {
            return new Settings(holderTimeout, tokenTtl, workerBackend, workerIdleTimeout, bounds, hold);
        }
    }

    private final SlurmControl slurm;
    private final Ledger ledger;
    /** Signs nothing itself: each lend's tokens are signed with that lend's key ({@link #tokens}). */
    private final SiteKey key;

    private final Settings settings;
    private final Clock clock;
    private final SiteConfig site;
    private final Object lock = new Object();
    /** Moves borrowed vGPUs home and carries out admins' moves. Guarded by {@link #lock}. */
    private final MigrationHook hook;
    /** The holders cancelled, lost and evacuated. Guarded by {@link #lock}. */
    private final HolderBook holders;
    /** The first step of each tick; guarded by {@link #lock}, but for the bridge's {@code done}. */
    private final Reconciliation reconciliation;
    /** Plans held jobs and secures their assemblies. Guarded by {@link #lock}. */
    private final AssemblySecurer securer;
    /** The workers' requests; takes {@link #lock} itself. */
    private final HolderAnnouncements announcements;
    /** The migration agents' requests; takes {@link #lock} itself. */
    private final AgentRequests agents;
    /** What the last tick read of Slurm, for {@link #status()}; empty before the first. Guarded by {@link #lock}. */
    private SlurmInventory lastLook = new SlurmInventory(List.of(), List.of());

    /**
     * @param key the site key: the key of each lend derived from it signs that lend's session tokens and checks the
     *     proofs of its holder's worker
     */
    public Tracker(SiteConfig site, SlurmControl slurm, Ledger ledger, SiteKey key, Settings settings, Clock clock) {
        this.site = Objects.requireNonNull(site, "site");
        this.slurm = Objects.requireNonNull(slurm, "slurm");
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.key = Objects.requireNonNull(key, "key");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.clock = Objects.requireNonNull(clock, "clock");
        JobComments comments = new JobComments(slurm);
        this.holders = new HolderBook(slurm, ledger, comments, site.lendPartition());
        this.hook = new MigrationHook(
                site.policy().migration(),
                slurm,
                ledger,
                key,
                settings.migration(),
                holders::cancelled,
                new MigrationHook.Lenders() {
                    @Override
                    public String holderScript(long job, int vgpu, String node) {
                        return Tracker.this.securer.holderScript(job, Lend.planned(vgpu, node));
                    }

                    @Override
                    public String token(long job, int vgpu, String workerId) {
                        return tokens(job, vgpu)
                                .issue(
                                        Long.toString(job),
                                        vgpu,
                                        workerId,
                                        ledger.certificate(workerId),
                                        settings.tokenTtl());
                    }

                    @Override
                    public int distance(String a, String b) {
                        return site.distances().between(a, b);
                    }

                    @Override
                    public String partition() {
                        return site.lendPartition();
                    }
                });
        this.hook.onLost(holders::vgpuLost);
        this.reconciliation = new Reconciliation(ledger, hook, holders, comments, clock);
        this.securer = new AssemblySecurer(site, slurm, ledger, key, settings, hook, reconciliation, comments);
        this.announcements = new HolderAnnouncements(lock, slurm, ledger, hook, holders, key, site.workerTls(), clock);
        this.agents = new AgentRequests(lock, hook, settings.agentHold(), clock);
    }

    /**
     * What signs the session tokens of vGPU {@code vgpu} of job {@code job}: the key of that lend, which its holder's
     * worker holds instead of the site key ({@link SiteKey#forLend}).
     */
    private TokenIssuer tokens(long job, int vgpu) {
        return new TokenIssuer(key.forLend(Long.toString(job), vgpu), clock);
    }

    /** One look at Slurm and everything that follows from it (see the class comment). */
    public void tick() {
        SlurmInventory inventory = slurm.inventory();
        Instant now = clock.instant();
        synchronized (lock) {
            lastLook = inventory;
            reconciliation.reconcile(inventory);
            for (Assembly assembly : ledger.assemblies()) {
                if (assembly.phase() == Assembly.Phase.SECURING) {
                    securer.secure(assembly, inventory, now);
                } else {
                    holders.noticeLost(assembly, inventory);
                }
            }
            hook.advance(inventory, now);
            hook.decide(inventory, now);
            securer.planHeldJobs(inventory, now);
        }
    }

    /**
     * The SPANK bridge's {@code assembly <job> <node>}: the job's local GPU indices and its borrowed
     * vGPUs' workers with fresh tokens, {@link Answer.NotYet} while workers are being opened, or
     * {@link Answer.Refused}.
     */
    public Answer assembly(long job, String node) {
        Assembly assembly;
        synchronized (lock) {
            assembly = ledger.assembly(job).orElse(null);
        }
        if (assembly == null) {
            return new Answer.Refused("job " + job
                    + " has no vGPU assembly from the tracker (it was not released by the" + " tracker, or has ended)");
        }
        if (assembly.phase() == Assembly.Phase.SECURING) {
            return new Answer.NotYet("the tracker is still securing the GPUs of job " + job);
        }
        if (!assembly.node().equals(node)) {
            return new Answer.Refused(
                    "job " + job + " has its vGPU assembly on node " + assembly.node() + ", not on " + node);
        }
        if (assembly.lends().stream()
                .anyMatch(lend -> !lend.home() && lend.worker().isEmpty())) {
            // Released jobs have every worker; only a ledger edited by hand gets here.
            return new Answer.Refused("job " + job + " has borrowed vGPUs without a worker");
        }
        Optional<SlurmJob> slurmJob = slurm.job(job);
        if (slurmJob.isEmpty()) {
            return new Answer.Refused("Slurm does not know job " + job);
        }
        List<Integer> local = slurmJob.get().gpuIndicesOn(node);
        if (local.size() != assembly.localGpus()) {
            if (!slurmJob.get().state().equals("RUNNING")) {
                return new Answer.NotYet(
                        "job " + job + " is " + slurmJob.get().state() + ", its GPUs are not allocated yet");
            }
            return new Answer.Refused("job " + job + " holds " + local.size() + " GPU(s) on " + node
                    + " but its assembly has " + assembly.localGpus() + " local GPU(s)");
        }
        List<Answer.Borrowed> borrowed = new ArrayList<>();
        List<Integer> granted = new ArrayList<>(local);
        for (Lend lend : assembly.lends()) {
            if (lend.home()) {
                // The bridge gives the vGPUs without a remote entry the local GPUs in the order listed; lends come in
                // vGPU order after the job's own GPUs, so a vGPU that moved home takes its place in the list also
                // when a borrowed vGPU comes before it.
                granted.add(lend.gpu().getAsInt());
                continue;
            }
            String workerId = lend.workerId().orElseThrow();
            // the worker's certificate, which it proved when it announced itself: the job's client accepts no other
            String token = tokens(job, lend.vgpu())
                    .issue(
                            Long.toString(job),
                            lend.vgpu(),
                            workerId,
                            ledger.certificate(workerId),
                            settings.tokenTtl());
            borrowed.add(new Answer.Borrowed(lend.vgpu(), lend.worker().orElseThrow(), token));
        }
        LOG.info(
                "job {} on {} gets its assembly: {} local GPU(s) {}, {} borrowed",
                job,
                node,
                local.size(),
                local,
                borrowed.size());
        return new Answer.Assembled(assembly.vgpus(), granted, borrowed);
    }

    /**
     * The SPANK bridge's {@code done <job> <node> <status>}: the job's batch step ended; its holders
     * are cancelled at once (by the next tick, which this wakes). Only the node of the job's assembly ends
     * it, and only once the job has started (its assembly released, Slurm not holding it pending): any
     * other {@code done} is refused and ends nothing. A job without an assembly has nothing to end.
     */
    public Answer done(long job, String node, int status) {
        Assembly assembly;
        synchronized (lock) {
            assembly = ledger.assembly(job).orElse(null);
        }
        Optional<String> refusal = Optional.ofNullable(assembly).flatMap(live -> doneRefusal(live, node));
        if (refusal.isPresent()) {
            LOG.warn("done {} {} {} refused: {}", job, node, status, refusal.get());
            return new Answer.Refused(refusal.get());
        }
        LOG.info("job {} ended on {} with status {}", job, node, status);
        reconciliation.done(job);
        return new Answer.Accepted();
    }

    /** Why a {@code done} from {@code node} cannot be the end of this assembly's job. */
    private Optional<String> doneRefusal(Assembly assembly, String node) {
        long job = assembly.job();
        if (assembly.phase() == Assembly.Phase.SECURING) {
            return Optional.of(
                    "job " + job + " has not started (the tracker is still securing its GPUs): a done ends nothing");
        }
        if (!assembly.node().equals(node)) {
            return Optional.of("job " + job + " has its vGPU assembly on node " + assembly.node() + ", not on " + node
                    + ": a done from there ends nothing");
        }
        return slurm.job(job)
                .filter(slurmJob -> slurmJob.state().equals("PENDING"))
                .map(pending -> "Slurm has job " + job + " pending, its batch step has not run: a done ends nothing");
    }

    /**
     * A holder's worker saying where it listens ({@code worker JOB VGPU HOST:PORT WORKER-ID PROOF}):
     * taken when the proof is a token for exactly that job, vGPU and worker signed with the site key,
     * and the job's assembly is waiting for that vGPU's worker.
     */
    public Answer worker(long job, int vgpu, Endpoint endpoint, String workerId, String proof) {
        return announcements.worker(job, vgpu, endpoint, workerId, proof);
    }

    /**
     * A holder's worker leaving ({@code worker-leaving JOB VGPU WORKER-ID PROOF}, authenticated as {@code worker}):
     * its holder job is being cancelled, by an admin's {@code scancel} or Slurm. Its vGPU is evacuated at once
     * ({@link MigrationHook#evacuate}; Slurm is read once, outside the lock); when nothing can take it, the job is
     * told (its comment), the log says so at ERROR and the report shows the vGPU lost with why.
     *
     * @return accepted with what moves where (the worker serves its session until it ends), or refused with why
     *         nothing moves (the worker may end at once)
     */
    public Answer workerLeaving(long job, int vgpu, String workerId, String proof) {
        return announcements.workerLeaving(job, vgpu, workerId, proof);
    }

    /** Who owns a job: from its assembly, else from Slurm; empty when neither knows the job. */
    public Optional<String> owner(long job) {
        synchronized (lock) {
            Optional<Assembly> assembly = ledger.assembly(job);
            if (assembly.isPresent()) {
                return Optional.of(assembly.get().user());
            }
        }
        return slurm.job(job).map(SlurmJob::user);
    }

    /**
     * A job's migration agent polling ({@code agent poll}): the credential must be the session token of one of the
     * job's borrowed vGPUs (see {@link MigrationHook#refusal}); its counters are kept for the hook, and the poll is
     * held up to the agent hold time until a command for the job is queued. The command is signed with the poll's
     * token and nonce, so only this job's agent can take it.
     */
    public AgentChannel.PollReply agentPoll(AgentChannel.Poll poll) {
        return agents.poll(poll);
    }

    /** A job's migration agent reporting how a migration ended ({@code agent done}); authenticated as a poll is. */
    public AgentChannel.DoneReply agentDone(AgentChannel.Done done) {
        return agents.done(done);
    }

    /** A job's migration agent stopping ({@code agent bye}); authenticated as a poll is. */
    public AgentChannel.DoneReply agentBye(AgentChannel.Bye bye) {
        return agents.bye(bye);
    }

    /**
     * {@code vgpu migrate JOB VGPU [NODE]} through the tracker: moves the vGPU home now (see
     * {@link MigrationHook#migrate}); reads Slurm once, outside the lock.
     */
    public MigrationHook.Reply migrate(long job, int vgpu, Optional<String> node, String who) {
        SlurmInventory inventory = slurm.inventory();
        synchronized (lock) {
            return hook.migrate(job, vgpu, node, inventory, clock.instant(), who);
        }
    }

    /** {@code vgpu drain NODE}: see {@link MigrationHook#drain}. */
    public MigrationHook.Reply drain(String node, String who) {
        SlurmInventory inventory = slurm.inventory();
        synchronized (lock) {
            return hook.drain(node, inventory, clock.instant(), who);
        }
    }

    /** {@code vgpu hook pause|resume}. */
    public MigrationHook.Reply pauseHook(boolean pause, String who) {
        synchronized (lock) {
            return hook.pause(pause, who);
        }
    }

    /** Tells {@code listener} of each migration as it ends (the tracker's metrics); it must not block. */
    public void onMigrationEnded(Consumer<MoveRecord> listener) {
        synchronized (lock) {
            hook.onEnded(listener);
        }
    }

    /** What each remote vGPU of a job forwarded, as its agent last reported; guarded by {@link #lock}. */
    private Map<Integer, StatusReport.Forwarded> forwarded(long job) {
        Map<Integer, StatusReport.Forwarded> forwarded = new HashMap<>();
        hook.stats(job).forEach((vgpu, stat) -> {
            if (stat.where() instanceof AgentChannel.RemoteWorker) {
                forwarded.put(vgpu, new StatusReport.Forwarded(stat.calls(), stat.bytes()));
            }
        });
        return forwarded;
    }

    /** Migrations under way and recently ended, oldest first. */
    public List<MoveRecord> migrations() {
        synchronized (lock) {
            return hook.moves();
        }
    }

    /** One migration, for {@code vgpu migrate}'s progress. */
    public Optional<MoveRecord> migration(long id) {
        synchronized (lock) {
            return hook.move(id);
        }
    }

    /** Whether a {@code done} arrived that the next tick has to act on. */
    public boolean hasPendingDone() {
        return reconciliation.hasPendingDone();
    }

    /**
     * What {@code vgpu report} shows and {@code /metrics} counts: live assemblies with their jobs'
     * local GPUs, waiting jobs, idle GPUs per node (all as the last tick saw Slurm) and recently
     * ended assemblies. Migrations and forwarded traffic are empty until the migration hook fills them.
     */
    public StatusReport status() {
        synchronized (lock) {
            List<StatusReport.Live> live = ledger.assemblies().stream()
                    .map(assembly -> new StatusReport.Live(
                            assembly,
                            holders.lostOf(assembly),
                            lastLook.job(assembly.job())
                                    .map(job -> job.gpuIndicesOn(assembly.node()))
                                    .orElse(List.of()),
                            forwarded(assembly.job()),
                            holders.lostVgpus(assembly.job())))
                    .toList();
            List<StatusReport.Migration> migrations = hook.moves().stream()
                    .map(move -> new StatusReport.Migration(
                            move.id(),
                            move.job(),
                            move.vgpu(),
                            move.from(),
                            move.to(),
                            move.by() + ": " + move.reason() + "; " + move.explanation(),
                            move.started(),
                            move.ended(),
                            move.state().equals(MOVE_OK) ? OptionalLong.of(move.blockedMs()) : OptionalLong.empty(),
                            move.state().equals(MOVE_OK) ? OptionalLong.of(move.bytes()) : OptionalLong.empty(),
                            move.state()))
                    .toList();
            List<StatusReport.NodeIdle> idle = ClusterView.idleGpus(lastLook, site).entrySet().stream()
                    .map(node -> new StatusReport.NodeIdle(node.getKey(), node.getValue()))
                    .toList();
            return new StatusReport(
                    clock.instant(),
                    live,
                    migrations,
                    securer.waiting(),
                    idle,
                    reconciliation.history(),
                    reconciliation.endedTotals());
        }
    }
}
