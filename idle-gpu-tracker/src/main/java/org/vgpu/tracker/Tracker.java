package org.vgpu.tracker;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import java.util.function.LongFunction;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenIssuer;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.siteconfig.NodeConfig;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.cluster.ClusterView;
import org.vgpu.tracker.cluster.IdleClock;
import org.vgpu.tracker.hook.AgentMailbox;
import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.hook.MoveRecord;
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
 * The tracker's state and decisions. Each {@link #tick()} reads Slurm once and then, in this order:
 * ends the assemblies of jobs that are gone (cancelling their holders), cancels holder jobs the
 * ledger does not know, moves assemblies being secured forward (submit holders, learn their GPUs,
 * pin and release the job), and plans held vgpu jobs that have no assembly yet, oldest first. The
 * ledger is written before Slurm is changed, so a tracker killed at any point finds on restart
 * either what it did or what it was about to do, and the first tick reconciles the two.
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
 *     whichever tracker answers), or, past the migration timeout, from where the agent's next poll says the
 *     vGPU runs: on the granted GPU is success (the lender's holder is cancelled), remote is failure (the grant
 *     holder is cancelled). While the agent says nothing, both holders stay until the job ends.</li>
 * <li>A lend recorded as home whose migration has no outcome yet (killed between the two records) is finished as
 *     success; the lender's holder no assembly names any more is cancelled as unknown.</li>
 * </ul>
 *
 * <p>Requests of the SPANK bridge ({@link #assembly}, {@link #done}) and {@link #status()} come
 * from other threads; they take the lock only to read or record, never while waiting on Slurm
 * or a lender, except {@link #tick()}'s short Slurm commands.
 */
public final class Tracker {
    private static final Logger LOG = LoggerFactory.getLogger(Tracker.class);
    /** Job states in which a job may still run (or runs): anything else has ended for the tracker. */
    private static final Set<String> ACTIVE_STATES =
            Set.of("PENDING", "CONFIGURING", "RUNNING", "SUSPENDED", "STOPPED", "RESIZING");

    private static final int HISTORY_LINES = 200;
    private static final String COMMENT_PREFIX = "vgpu: ";

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

    private final SiteConfig site;
    private final SlurmControl slurm;
    private final Ledger ledger;
    private final SiteKey key;
    private final TokenIssuer tokens;
    private final Settings settings;
    private final Clock clock;
    private final AssemblyPlanner planner;
    private final IdleClock idleClock = new IdleClock();
    private final Object lock = new Object();
    /** Held vgpu jobs without an assembly, and why, by job id. Guarded by {@link #lock}. */
    private final Map<Long, StatusReport.Waiting> waiting = new TreeMap<>();
    /** The comment last written to each job, so it is rewritten only on change. Guarded by {@link #lock}. */
    private final Map<Long, String> comments = new HashMap<>();
    /** Assemblies that ended, newest last. Guarded by {@link #lock}. */
    private final Deque<StatusReport.Ended> history = new ArrayDeque<>();
    /** How many assemblies ended since this tracker started, by why (for /metrics). Guarded by {@link #lock}. */
    private final Map<String, Long> endedTotals = new TreeMap<>();
    /** Holders of live assemblies that Slurm shows ended: those GPUs are no longer kept. Guarded by {@link #lock}. */
    private final Set<Long> lostHolders = new HashSet<>();
    /**
     * Holders whose worker left and whose vGPU is being evacuated: their end is expected, not a loss (an evacuation
     * that fails says so itself); guarded by {@link #lock}.
     */
    private final Set<Long> evacuatedHolders = new HashSet<>();
    /** Why each vGPU that dies with its cancelled holder is lost, by job and vGPU; guarded by {@link #lock}. */
    private final Map<Long, Map<Integer, String>> lostVgpus = new HashMap<>();
    /** Holders this tracker cancelled, which Slurm may still list as active for a moment. Guarded by {@link #lock}. */
    private final Set<Long> cancelledHolders = new HashSet<>();

    private final Set<Long> doneJobs = ConcurrentHashMap.newKeySet();
    /** Moves borrowed vGPUs home and carries out admins' moves. Guarded by {@link #lock}. */
    private final MigrationHook hook;
    /** What the last tick read of Slurm, for {@link #status()}; empty before the first. Guarded by {@link #lock}. */
    private SlurmInventory lastLook = new SlurmInventory(List.of(), List.of());

    /**
     * @param key the site key: signs the jobs' session tokens and checks the holders' workers' proofs
     */
    public Tracker(SiteConfig site, SlurmControl slurm, Ledger ledger, SiteKey key, Settings settings, Clock clock) {
        this.site = Objects.requireNonNull(site, "site");
        this.slurm = Objects.requireNonNull(slurm, "slurm");
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.key = Objects.requireNonNull(key, "key");
        this.tokens = new TokenIssuer(key, clock);
        this.settings = Objects.requireNonNull(settings, "settings");
        this.clock = Objects.requireNonNull(clock, "clock");
        this.planner = new AssemblyPlanner(site.policy(), site.distances(), site.lendPartition());
        this.hook = new MigrationHook(
                site.policy().migration(),
                slurm,
                ledger,
                key,
                settings.migration(),
                cancelledHolders::add,
                new MigrationHook.Lenders() {
                    @Override
                    public String holderScript(long job, int vgpu, String node) {
                        return Tracker.this.holderScript(job, Lend.planned(vgpu, node));
                    }

                    @Override
                    public String token(long job, int vgpu, String workerId) {
                        return tokens.issue(Long.toString(job), vgpu, workerId, settings.tokenTtl());
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
        this.hook.onLost(this::lost);
    }

    /** One look at Slurm and everything that follows from it (see the class comment). */
    public void tick() {
        SlurmInventory inventory = slurm.inventory();
        Instant now = clock.instant();
        synchronized (lock) {
            lastLook = inventory;
            endAssembliesOfEndedJobs(inventory);
            cancelUnknownHolders(inventory);
            for (Assembly assembly : ledger.assemblies()) {
                if (assembly.phase() == Assembly.Phase.SECURING) {
                    secure(assembly, inventory, now);
                } else {
                    noticeLostHolders(assembly, inventory);
                }
            }
            hook.advance(inventory, now);
            hook.decide(inventory, now);
            planHeldJobs(inventory, now);
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
            String token = tokens.issue(
                    Long.toString(job), lend.vgpu(), lend.workerId().orElseThrow(), settings.tokenTtl());
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
     * are cancelled at once (by the next tick, which this wakes).
     */
    public Answer done(long job, String node, int status) {
        LOG.info("job {} ended on {} with status {}", job, node, status);
        doneJobs.add(job);
        return new Answer.Accepted();
    }

    /**
     * A holder's worker saying where it listens ({@code worker JOB VGPU HOST:PORT WORKER-ID PROOF}):
     * taken when the proof is a token for exactly that job, vGPU and worker signed with the site key,
     * and the job's assembly is waiting for that vGPU's worker.
     */
    public Answer worker(long job, int vgpu, Endpoint endpoint, String workerId, String proof) {
        Optional<Answer> refused = proofRefusal(job, vgpu, workerId, proof);
        if (refused.isPresent()) {
            return refused.get();
        }
        synchronized (lock) {
            Optional<Assembly> assembly = ledger.assembly(job);
            Optional<Lend> lend = assembly.flatMap(current -> current.lends().stream()
                    .filter(candidate -> candidate.vgpu() == vgpu)
                    .findFirst());
            if (lend.isEmpty()) {
                return new Answer.Refused(
                        "job " + job + " has no borrowed vGPU " + vgpu + " (its assembly ended or never had it)");
            }
            if (hook.announce(job, vgpu, endpoint, workerId)) {
                return new Answer.Accepted();
            }
            if (lend.get().workerId().filter(id -> !id.equals(workerId)).isPresent()) {
                return new Answer.Refused("vGPU " + vgpu + " of job " + job + " is served by worker "
                        + lend.get().workerId().get());
            }
            ledger.record(assembly.get().withLend(lend.get().withWorker(endpoint, workerId)));
        }
        LOG.info("job {}: worker {} at {} serves vGPU {}", job, workerId, endpoint, vgpu);
        return new Answer.Accepted();
    }

    /**
     * Why a worker's request is refused: its proof must be a token for exactly that job, vGPU and worker, signed with
     * the site key (HolderAnnouncement); empty when it is.
     */
    private Optional<Answer> proofRefusal(long job, int vgpu, String workerId, String proof) {
        try {
            SessionToken token = new TokenVerifier(key, workerId, clock).verify(proof, vgpu);
            if (!token.jobId().equals(Long.toString(job))) {
                return Optional.of(new Answer.Refused("the proof is for job " + token.jobId() + ", not " + job));
            }
            return Optional.empty();
        } catch (VgpuFailure e) {
            return Optional.of(new Answer.Unauthenticated(e.detail()));
        }
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
        Optional<Answer> refused = proofRefusal(job, vgpu, workerId, proof);
        if (refused.isPresent()) {
            return refused.get();
        }
        String notServed = "worker " + workerId + " does not serve vGPU " + vgpu + " of job " + job
                + " (the assembly ended, or the vGPU moved away already)";
        synchronized (lock) {
            // A holder the tracker cancelled itself (the job ended, the vGPU moved) is answered without asking Slurm.
            if (servedBy(job, vgpu, workerId).isEmpty()) {
                return new Answer.Refused(notServed);
            }
        }
        SlurmInventory inventory = slurm.inventory();
        synchronized (lock) {
            Optional<Lend> lend = servedBy(job, vgpu, workerId);
            if (lend.isEmpty()) {
                return new Answer.Refused(notServed);
            }
            long holder = lend.get().holder().orElse(-1);
            LOG.warn(
                    "job {}: worker {} of vGPU {} is leaving (holder {} is being cancelled): evacuating the vGPU",
                    job,
                    workerId,
                    vgpu,
                    holder);
            MigrationHook.Reply reply = hook.evacuate(job, vgpu, holder, inventory, clock.instant());
            if (reply.ok()) {
                evacuatedHolders.add(holder);
            }
            return reply.ok() ? new Answer.Evacuating(reply.text()) : new Answer.Refused(reply.text());
        }
    }

    /** The lend of vGPU {@code vgpu} of job {@code job} when worker {@code workerId} serves it now; guarded by lock. */
    private Optional<Lend> servedBy(long job, int vgpu, String workerId) {
        return ledger.assembly(job)
                .flatMap(assembly -> assembly.lends().stream()
                        .filter(lend -> lend.vgpu() == vgpu)
                        .findFirst())
                .filter(lend -> !lend.home() && lend.workerId().equals(Optional.of(workerId)));
    }

    /** A vGPU that dies with its holder: the job's comment, the log at ERROR, the report; guarded by {@link #lock}. */
    private void lost(MigrationHook.Lost lost) {
        ledger.assembly(lost.job())
                .flatMap(assembly -> assembly.lends().stream()
                        .filter(lend -> lend.vgpu() == lost.vgpu())
                        .findFirst())
                .ifPresent(lend -> lend.holder().ifPresent(evacuatedHolders::remove));
        lostVgpus.computeIfAbsent(lost.job(), ignored -> new HashMap<>()).put(lost.vgpu(), lost.reason());
        LOG.error("job {}: vGPU {} is lost: {}", lost.job(), lost.vgpu(), lost.reason());
        comment(lost.job(), "vGPU " + lost.vgpu() + " LOST: " + lost.reason());
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
        AgentChannel.Credential credential = poll.credential();
        long job = Long.parseLong(credential.job());
        synchronized (lock) {
            Optional<AgentChannel.Refused> refused = refused("poll", credential);
            if (refused.isPresent()) {
                return refused.get();
            }
            hook.report(job, poll.stats(), poll.expectedEnd(), clock.instant());
        }
        Optional<AgentMailbox.Order> order;
        try {
            order = hook.mailbox().take(job, settings.agentHold());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new AgentChannel.Idle();
        }
        if (order.isEmpty()) {
            return new AgentChannel.Idle();
        }
        // The target's toString leaves a remote target's session token out.
        LOG.info(
                "migration {}: sent to job {}'s agent: vGPU {} to {}",
                order.get().id(),
                job,
                order.get().vgpu(),
                order.get().target());
        return AgentChannel.Migrate.signed(
                credential.token(),
                poll.nonce(),
                order.get().id(),
                order.get().vgpu(),
                order.get().target());
    }

    /** Why an agent's request with {@code credential} is refused (logged), or empty; guarded by {@link #lock}. */
    private Optional<AgentChannel.Refused> refused(String request, AgentChannel.Credential credential) {
        long job = Long.parseLong(credential.job());
        Optional<String> refusal = hook.refusal(job, credential.vgpu(), credential.token());
        refusal.ifPresent(
                why -> LOG.warn("agent {} for vGPU {} of job {} refused: {}", request, credential.vgpu(), job, why));
        return refusal.map(AgentChannel.Refused::because);
    }

    /** A job's migration agent reporting how a migration ended ({@code agent done}); authenticated as a poll is. */
    public AgentChannel.DoneReply agentDone(AgentChannel.Done done) {
        return answered("done", done.credential(), job -> hook.done(job, done.id(), done.outcome(), clock.instant()));
    }

    /** A job's migration agent stopping ({@code agent bye}); authenticated as a poll is. */
    public AgentChannel.DoneReply agentBye(AgentChannel.Bye bye) {
        return answered("bye", bye.credential(), job -> {
            LOG.info("job {}'s migration agent stopped (its app ended)", job);
            return hook.bye(job, clock.instant());
        });
    }

    /** {@code answer} for the credential's job under {@link #lock}, or why its {@code request} is refused. */
    private AgentChannel.DoneReply answered(
            String request, AgentChannel.Credential credential, LongFunction<AgentChannel.DoneReply> answer) {
        synchronized (lock) {
            Optional<AgentChannel.Refused> refused = refused(request, credential);
            return refused.isPresent() ? refused.get() : answer.apply(Long.parseLong(credential.job()));
        }
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
        return !doneJobs.isEmpty();
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
                            assembly.holders().stream()
                                    .filter(lostHolders::contains)
                                    .toList(),
                            lastLook.job(assembly.job())
                                    .map(job -> job.gpuIndicesOn(assembly.node()))
                                    .orElse(List.of()),
                            forwarded(assembly.job()),
                            lostVgpus.getOrDefault(assembly.job(), Map.of())))
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
                            move.state().equals("ok") ? OptionalLong.of(move.blockedMs()) : OptionalLong.empty(),
                            move.state().equals("ok") ? OptionalLong.of(move.bytes()) : OptionalLong.empty(),
                            move.state()))
                    .toList();
            List<StatusReport.NodeIdle> idle = ClusterView.idleGpus(lastLook, site).entrySet().stream()
                    .map(node -> new StatusReport.NodeIdle(node.getKey(), node.getValue()))
                    .toList();
            return new StatusReport(
                    clock.instant(),
                    live,
                    migrations,
                    List.copyOf(waiting.values()),
                    idle,
                    List.copyOf(history),
                    endedTotals);
        }
    }

    private void endAssembliesOfEndedJobs(SlurmInventory inventory) {
        Set<Long> done = new HashSet<>(doneJobs);
        for (Assembly assembly : ledger.assemblies()) {
            Optional<SlurmJob> job = inventory.job(assembly.job());
            if (done.contains(assembly.job())) {
                end(assembly, "done", "its batch step ended");
            } else if (job.isEmpty()) {
                end(assembly, "gone", "Slurm no longer knows the job");
            } else if (!ACTIVE_STATES.contains(job.get().state())) {
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
        comments.remove(assembly.job());
    }

    /** Cancels an assembly's holders, forgets it in the ledger and keeps an {@code ended} line for {@code vgpu report}. */
    private void close(Assembly assembly, String why, Optional<String> reason) {
        hook.endJob(assembly.job(), clock.instant());
        cancelHolders(assembly);
        ledger.forget(assembly.job(), why);
        lostHolders.removeAll(assembly.holders());
        evacuatedHolders.removeAll(assembly.holders());
        lostVgpus.remove(assembly.job());
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

    /** Ends an assembly's lends: its holders are cancelled, which stops the workers they run. */
    private void cancelHolders(Assembly assembly) {
        slurm.cancel(assembly.holders());
        cancelledHolders.addAll(assembly.holders());
    }

    /** Holder jobs (lend partition, holder name) that no live assembly names: left by a crash or a hand; cancelled. */
    private void cancelUnknownHolders(SlurmInventory inventory) {
        Set<Long> known = new HashSet<>(hook.grants());
        ledger.assemblies().forEach(assembly -> known.addAll(assembly.holders()));
        List<Long> unknown = inventory.jobs().stream()
                .filter(job -> job.partition().equals(site.lendPartition()))
                .filter(job -> job.name().startsWith(SlurmControl.HOLDER_NAME_PREFIX)
                        || job.name().startsWith(SlurmControl.GRANT_NAME_PREFIX))
                .filter(job -> ACTIVE_STATES.contains(job.state()))
                .map(SlurmJob::id)
                .filter(id -> !known.contains(id) && !cancelledHolders.contains(id))
                .toList();
        cancelledHolders.retainAll(inventory.jobs().stream()
                .filter(job -> ACTIVE_STATES.contains(job.state()))
                .map(SlurmJob::id)
                .toList());
        if (!unknown.isEmpty()) {
            LOG.warn("cancelling holder job(s) {} that the ledger does not know", unknown);
            slurm.cancel(unknown);
        }
    }

    /** Moves an assembly being secured forward: holders submitted, their GPUs learned, then the job pinned and released. */
    private void secure(Assembly start, SlurmInventory inventory, Instant now) {
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
        comment(
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
        close(assembly, "aborted", Optional.of(why));
        comment(assembly.job(), "assembly given up, planning again: " + why);
    }

    private void noticeLostHolders(Assembly assembly, SlurmInventory inventory) {
        for (long holder : assembly.holders()) {
            Optional<SlurmJob> job = inventory.job(holder);
            boolean running =
                    job.isPresent() && ACTIVE_STATES.contains(job.get().state());
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

    private void planHeldJobs(SlurmInventory inventory, Instant now) {
        List<SlurmJob> held = inventory.jobs().stream()
                .filter(job -> job.held()
                        && job.asksForVgpu()
                        && ledger.assembly(job.id()).isEmpty())
                .sorted(Comparator.comparingLong(SlurmJob::id))
                .toList();
        waiting.keySet().retainAll(held.stream().map(SlurmJob::id).toList());
        // A held job cancelled before it was assembled never reaches end(): drop its last comment here.
        comments.keySet()
                .retainAll(inventory.jobs().stream()
                        .filter(job -> ACTIVE_STATES.contains(job.state()))
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
                    comment(job.id(), wait.reason());
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

    /** What a holder runs: see {@link HolderScript}. */
    private String holderScript(long job, Lend lend) {
        NodeConfig node = site.node(lend.node())
                .orElseThrow(
                        () -> new IllegalStateException("node " + lend.node() + " is not in the site configuration"));
        return new HolderScript(
                        site.slurm().vgpuCommand(),
                        site.tokenKeyFile(),
                        site.tracker(),
                        settings.workerBackend(),
                        settings.workerIdleTimeout())
                .forLend(lend.node(), node.reachableAs(), job, lend.vgpu());
    }

    private void comment(long job, String text) {
        String comment = COMMENT_PREFIX + text;
        if (comment.equals(comments.get(job))) {
            return;
        }
        try {
            slurm.comment(job, comment);
            comments.put(job, comment);
        } catch (RuntimeException e) {
            LOG.warn("job {}: cannot set its comment: {}", job, e.getMessage());
        }
    }

    private void remember(StatusReport.Ended ended) {
        endedTotals.merge(ended.why(), 1L, Long::sum);
        history.addLast(ended);
        while (history.size() > HISTORY_LINES) {
            history.removeFirst();
        }
    }
}
