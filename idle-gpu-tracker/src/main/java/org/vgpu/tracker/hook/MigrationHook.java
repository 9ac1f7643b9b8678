package org.vgpu.tracker.hook;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SessionToken;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.siteconfig.MigrationPolicy;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.ledger.Migration;
import org.vgpu.tracker.ledger.MigrationOutcome;
import org.vgpu.tracker.placement.Availability;
import org.vgpu.tracker.slurm.JobTime;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;
import org.vgpu.tracker.slurm.SlurmNode;

/**
 * The tracker's migration hook: moves borrowed vGPUs of running jobs onto GPUs freed on the jobs'
 * own nodes, and carries out the moves admins ask for. Each migration goes, journaled in the
 * ledger before each step acts:
 * <ol>
 * <li>intent ({@code claiming}, no grant yet), then a grant holder {@code vgpu-grant-JOB-vK} is submitted
 *     on the job's node, which claims a GPU in Slurm's books;</li>
 * <li>once the grant holder runs, its GPU index is known: {@code sent}, and {@code migrate ID K local:GPU}
 *     is queued for the job's agent, which takes it with its next (or held) poll;</li>
 * <li>{@code agent done ... ok}: the lend becomes "home on GPU g via grant holder h" (it keeps its worker's id,
 *     so the job's token still identifies it), then the lender's holder is cancelled;
 *     {@code agent done ... failed}: the grant holder is cancelled, the vGPU stays remote.</li>
 * </ol>
 * A grant holder that does not start within the grant timeout (Slurm gave the GPU to another job first) is
 * cancelled and the vGPU tried again later. No {@code done} within the migration timeout: where the agent's polls
 * since the command say the vGPU runs decides (remote: failed, on the granted GPU: ok); with no poll since, nothing
 * is cancelled, because either GPU may be the one in use: both stay held until the agent reports or the job ends.
 * A command no agent took within the migration timeout fails (the vGPU cannot have left). The last outcome of each
 * vGPU (any result but gave-up) starts its cooldown.
 *
 * <p>Not thread-safe: the tracker calls it under its lock. Only {@link AgentMailbox#take} waits, outside it.
 */
public final class MigrationHook {
    private static final Logger LOG = LoggerFactory.getLogger(MigrationHook.class);
    private static final int HISTORY = 200;
    /**
     * A job's agent holds a poll nearly always (it polls again within a second of each reply): one that has held none
     * for this long has gone with its app (ended, or killed), and nothing is sent to it.
     */
    static final Duration AGENT_GONE_AFTER = Duration.ofSeconds(10);

    /** Tokens are checked for key, job, vGPU and worker, not expiry: a job's agent polls for as long as the job runs. */
    private static final Clock NO_EXPIRY = Clock.fixed(Instant.EPOCH, ZoneOffset.UTC);

    /**
     * @param grantTimeout     how long a grant holder may stay pending before the GPU counts as taken by another job
     * @param migrationTimeout how long after sending the command the tracker waits for the agent's {@code done}
     */
    public record Bounds(Duration grantTimeout, Duration migrationTimeout) {
        public Bounds {
            Objects.requireNonNull(grantTimeout, "grantTimeout");
            Objects.requireNonNull(migrationTimeout, "migrationTimeout");
        }
    }

    /** What a move to another lender needs of the tracker: its holder jobs' script and session tokens. */
    public interface Lenders {
        /** The script of a holder job that serves vGPU {@code vgpu} of job {@code job} from {@code node}. */
        String holderScript(long job, int vgpu, String node);

        /** A fresh session token for vGPU {@code vgpu} of job {@code job} on worker {@code workerId}. */
        String token(long job, int vgpu, String workerId);

        /** How far apart two nodes are (site distances): a drain picks the nearest lender. */
        int distance(String a, String b);

        /** The lend partition, whose nodes may lend. */
        String partition();
    }

    /** What the job's agent last said of one vGPU, and when. */
    private record Report(AgentChannel.Stat stat, Instant at) {}

    /** A reply to an admin's request: {@code ok} with text, or refused with a reason. */
    public record Reply(boolean ok, String text) {
        static Reply ok(String text) {
            return new Reply(true, text);
        }

        static Reply refused(String reason) {
            return new Reply(false, reason);
        }
    }

    private final MigrationPolicy policy;
    private final MovePolicy movePolicy;
    private final SlurmControl slurm;
    private final Ledger ledger;
    private final SiteKey key;
    private final Bounds bounds;
    private final Consumer<Long> holderCancelled;
    private final Lenders lenders;
    private final AgentMailbox mailbox = new AgentMailbox();
    private final Map<Long, Map<Integer, Report>> reports = new HashMap<>();
    /** Each job's end as the user hints it, from its agent's newest poll (a poll without a hint drops it). */
    private final Map<Long, Instant> hintedEnds = new HashMap<>();

    private final Map<Long, String> reasons = new HashMap<>();
    private final Map<Long, MoveRecord> moves = new LinkedHashMap<>();
    private final Set<Long> silentNoted = new HashSet<>();
    /** The free GPUs of each job's node at the hook's last look: a newly freed one asks the agent for fresh figures. */
    private final Map<Long, Set<Integer>> freeSeen = new HashMap<>();

    /** Migrations that evacuate a vGPU from a holder being cancelled: one that fails loses the vGPU. */
    private final Set<Long> evacuations = new HashSet<>();

    private boolean paused;
    private Consumer<MoveRecord> onEnded = move -> {};
    private Consumer<Lost> lost = vgpu -> {};

    /**
     * @param holderCancelled told of every holder this hook cancels, so the tracker does not take it for lost or
     *                        unknown while Slurm still lists it
     */
    public MigrationHook(
            MigrationPolicy policy,
            SlurmControl slurm,
            Ledger ledger,
            SiteKey key,
            Bounds bounds,
            Consumer<Long> holderCancelled,
            Lenders lenders) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.movePolicy = new MovePolicy(policy);
        this.slurm = Objects.requireNonNull(slurm, "slurm");
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.key = Objects.requireNonNull(key, "key");
        this.bounds = Objects.requireNonNull(bounds, "bounds");
        this.holderCancelled = Objects.requireNonNull(holderCancelled, "holderCancelled");
        this.lenders = Objects.requireNonNull(lenders, "lenders");
        for (Migration migration : ledger.migrations()) {
            moves.put(
                    migration.id(),
                    new MoveRecord(
                            migration.id(),
                            migration.job(),
                            migration.vgpu(),
                            "?",
                            target(migration),
                            migration.remote() ? "remote" : "home",
                            migration.by(),
                            "found in the ledger at start",
                            migration.started(),
                            state(migration),
                            0,
                            0,
                            Optional.empty(),
                            "the tracker restarted during this migration"));
        }
    }

    public AgentMailbox mailbox() {
        return mailbox;
    }

    public boolean paused() {
        return paused;
    }

    /** {@code vgpu hook pause|resume}: a paused hook starts no migration of its own; those under way go on. */
    public Reply pause(boolean pause, String who) {
        boolean was = paused;
        paused = pause;
        LOG.info("hook {} by {}", pause ? "paused" : "resumed", who);
        return Reply.ok("hook " + (pause ? "paused" : "running") + (was == pause ? " (it was already)" : ""));
    }

    /** Told of each migration as it ends (for the tracker's metrics), under the tracker's lock: it must not block. */
    public void onEnded(Consumer<MoveRecord> listener) {
        onEnded = Objects.requireNonNull(listener, "listener");
    }

    /** What the job's agent last reported of each of its vGPUs, by vGPU. */
    public Map<Integer, AgentChannel.Stat> stats(long job) {
        Map<Integer, AgentChannel.Stat> stats = new HashMap<>();
        reports.getOrDefault(job, Map.of()).forEach((vgpu, report) -> stats.put(vgpu, report.stat()));
        return stats;
    }

    /** Migrations under way and recently ended, oldest first. */
    public List<MoveRecord> moves() {
        return List.copyOf(moves.values());
    }

    public Optional<MoveRecord> move(long id) {
        return Optional.ofNullable(moves.get(id));
    }

    /** Why the hook leaves a job's borrowed vGPUs where they are, as last decided. */
    public Optional<String> reason(long job) {
        return Optional.ofNullable(reasons.get(job));
    }

    /** The grant holders of migrations under way: the tracker's own jobs. */
    public Set<Long> grants() {
        Set<Long> grants = new HashSet<>();
        ledger.migrations().forEach(migration -> migration.grant().ifPresent(grants::add));
        return grants;
    }

    /** Takes from {@code free} the GPUs of grant holders Slurm does not show running yet. */
    public void reserve(Availability free, SlurmInventory inventory) {
        for (Migration migration : ledger.migrations()) {
            boolean runs = migration.grant().isPresent()
                    && inventory
                            .job(migration.grant().getAsLong())
                            .map(job -> job.state().equals("RUNNING"))
                            .orElse(false);
            if (!runs) {
                free.node(migration.node()).ifPresent(Availability.Node::takeForLend);
            }
        }
    }

    /** A job's assembly ends: its grant holders are cancelled with its other holders, nothing more is sent to it. */
    public void endJob(long job, Instant now) {
        List<Long> grants = new ArrayList<>();
        for (Migration migration : ledger.migrations()) {
            if (migration.job() == job) {
                evacuations.remove(migration.id());
                migration.grant().ifPresent(grants::add);
                remember(migration.id(), move -> move.endedAt(now, "gave-up", 0, 0, "the job ended"));
            }
        }
        if (!grants.isEmpty()) {
            LOG.info("job {} ended during its migration: grant holder(s) {} cancelled", job, grants);
        }
        cancel(grants);
        mailbox.clear(job);
        reports.remove(job);
        hintedEnds.remove(job);
        freeSeen.remove(job);
        reasons.remove(job);
    }

    // ------------------------------------------------------------------ the agent's side

    /**
     * Whether {@code token} lets its holder speak for vGPU {@code vgpu} of job {@code job}: signed with the site
     * key for that job, vGPU and the worker the ledger has for the lend (or had, for a lend that moved home).
     *
     * @return why not, or empty when it does
     */
    public Optional<String> refusal(long job, int vgpu, String token) {
        Optional<Assembly> assembly = ledger.assembly(job);
        if (assembly.isEmpty() || assembly.get().phase() != Assembly.Phase.RELEASED) {
            return Optional.of("job " + job + " has no running vGPU assembly at this tracker");
        }
        List<String> workerIds = lend(assembly.get(), vgpu).map(Lend::workerIds).orElse(List.of());
        if (workerIds.isEmpty()) {
            return Optional.of("job " + job + " has no borrowed vGPU " + vgpu);
        }
        String why = "";
        for (String workerId : workerIds) {
            try {
                SessionToken granted = new TokenVerifier(key, workerId, NO_EXPIRY).verify(token, vgpu);
                if (!granted.jobId().equals(Long.toString(job))) {
                    return Optional.of(
                            "unauthenticated: the token is job " + granted.jobId() + "'s, not job " + job + "'s");
                }
                return Optional.empty();
            } catch (VgpuFailure e) {
                // The token may name an earlier worker of the lend: try those before refusing.
                why = why.isEmpty() ? e.detail() : why;
            }
        }
        return Optional.of("unauthenticated: " + why);
    }

    /**
     * Keeps what an authenticated poll says of the job's vGPUs: the cost model's counters, where each vGPU runs
     * (what settles a migration whose {@code done} never came), and the job's end as its user hints it.
     */
    public void report(long job, List<AgentChannel.Stat> stats, Optional<Instant> hintedEnd, Instant now) {
        Map<Integer, Report> byVgpu = reports.computeIfAbsent(job, ignored -> new HashMap<>());
        for (AgentChannel.Stat stat : stats) {
            byVgpu.put(stat.vgpu(), new Report(stat, now));
        }
        hintedEnd.ifPresentOrElse(end -> hintedEnds.put(job, end), () -> hintedEnds.remove(job));
    }

    /**
     * A worker announcing itself for vGPU {@code vgpu} of job {@code job} (its proof already checked): taken when it
     * runs in the holder of a move to another lender ({@code NODE-holder-HOLDER} names it).
     *
     * @return whether a migration took it
     */
    public boolean announce(long job, int vgpu, Endpoint endpoint, String workerId) {
        for (Migration migration : ledger.migrations()) {
            if (migration.job() == job
                    && migration.vgpu() == vgpu
                    && migration.remote()
                    && migration.phase() == Migration.Phase.CLAIMING
                    && migration.grant().isPresent()
                    && workerId.endsWith("-holder-" + migration.grant().getAsLong())) {
                ledger.record(migration.withWorker(new Migration.Worker(endpoint, workerId)));
                LOG.info(
                        "migration {}: worker {} at {} is ready on {}",
                        migration.id(),
                        workerId,
                        endpoint,
                        migration.node());
                return true;
            }
        }
        return false;
    }

    /** The agent's {@code done} for migration {@code id}, authenticated as job {@code job}. */
    public AgentChannel.DoneReply done(long job, long id, AgentChannel.Outcome outcome, Instant now) {
        Optional<Migration> migration = ledger.migrations().stream()
                .filter(candidate -> candidate.id() == id)
                .findFirst();
        if (migration.isEmpty() || migration.get().job() != job) {
            return AgentChannel.Refused.because("job " + job + " has no migration " + id + " under way");
        }
        if (migration.get().phase() != Migration.Phase.SENT) {
            return AgentChannel.Refused.because("migration " + id + " was not sent to job " + job + "'s agent yet");
        }
        switch (outcome) {
            case AgentChannel.Succeeded ok ->
                succeed(migration.get(), ok.blockedMs(), ok.bytes(), now, "the agent moved it");
            case AgentChannel.Failed failed ->
                fail(
                        migration.get(),
                        now,
                        "the agent could not move it"
                                + migration
                                        .get()
                                        .worker()
                                        .map(worker -> " to " + worker.describe())
                                        .orElse("")
                                + ": " + failed.reason());
        }
        return new AgentChannel.Accepted();
    }

    /**
     * The agent's {@code bye}, authenticated as job {@code job}: its app ends. A command queued for it that no poll
     * took can never run: its migration fails now (grant cancelled, the vGPU stays where it is) instead of at the
     * migration timeout. A command already taken is left to the agent's {@code done} or that timeout, because the
     * agent may have acted on it.
     */
    public AgentChannel.DoneReply bye(long job, Instant now) {
        mailbox.leave(job);
        for (Migration migration : ledger.migrations()) {
            if (migration.job() == job
                    && migration.phase() == Migration.Phase.SENT
                    && mailbox.withdraw(job, migration.id())) {
                fail(migration, now, "the job's app ended before its agent took the command");
            }
        }
        return new AgentChannel.Accepted();
    }

    // ------------------------------------------------------------------ each tick

    /** Moves every migration under way forward (see the class comment). */
    public void advance(SlurmInventory inventory, Instant now) {
        for (Migration migration : ledger.migrations()) {
            Optional<Assembly> assembly = ledger.assembly(migration.job());
            Optional<Lend> lend = assembly.flatMap(current -> lend(current, migration.vgpu()));
            if (lend.isEmpty()) {
                giveUp(migration, now, "the job has no borrowed vGPU " + migration.vgpu() + " any more");
                continue;
            }
            if (migration.phase() == Migration.Phase.CLAIMING) {
                claim(migration, inventory, now);
            } else if (lend.get().holder().equals(migration.grant())) {
                // The tracker stopped between recording the move home and its outcome.
                ledger.finish(new MigrationOutcome(
                        migration.id(), migration.job(), migration.vgpu(), MigrationOutcome.Result.OK, 0, 0, now));
                remember(migration.id(), move -> move.endedAt(now, "ok", 0, 0, "home (recorded before a restart)"));
            } else {
                awaitDone(migration, now);
            }
        }
    }

    /** Starts a move home for every released job whose node has a free GPU now and whose move pays. */
    public void decide(SlurmInventory inventory, Instant now) {
        if (paused || !policy.migrateHome()) {
            return;
        }
        Set<Long> migrating = new HashSet<>();
        ledger.migrations().forEach(migration -> migrating.add(migration.job()));
        for (Assembly assembly : ledger.assemblies()) {
            List<Lend> remote = assembly.borrowedLends();
            if (assembly.phase() != Assembly.Phase.RELEASED || remote.isEmpty() || migrating.contains(assembly.job())) {
                continue;
            }
            Optional<String> gone = agentGone(assembly.job());
            if (gone.isPresent()) {
                reasons.put(assembly.job(), gone.get());
                continue;
            }
            List<Integer> free = freeGpus(inventory, assembly.node());
            Set<Integer> before = freeSeen.put(assembly.job(), Set.copyOf(free));
            if (!(before == null ? Set.of() : before).containsAll(free)) {
                // A GPU was just released here: the agent's next report, at once, carries today's counters.
                mailbox.nudge(assembly.job());
            }
            List<MovePolicy.Candidate> candidates = new ArrayList<>();
            for (Lend lend : remote) {
                Optional<MigrationOutcome> last = ledger.lastOutcome(assembly.job(), lend.vgpu());
                if (last.isPresent()
                        && last.get().result() == MigrationOutcome.Result.GAVE_UP
                        && now.isBefore(last.get().at().plus(bounds.grantTimeout()))) {
                    continue;
                }
                candidates.add(new MovePolicy.Candidate(
                        lend.vgpu(),
                        counters(assembly.job(), lend.vgpu()),
                        last.filter(outcome -> outcome.result() != MigrationOutcome.Result.GAVE_UP)
                                .map(MigrationOutcome::at)));
            }
            MovePolicy.Decision decision;
            if (free.isEmpty()
                    || candidates.stream()
                            .allMatch(candidate -> candidate.counters().isEmpty())) {
                // Nothing can move whatever the job's times are: the policy says why without asking Slurm for them.
                decision = movePolicy.decide(new MovePolicy.Situation(
                        now, Duration.ofSeconds(1), Optional.empty(), Optional.empty(), free, false, candidates));
            } else {
                Optional<JobTime> time = slurm.jobTime(assembly.job());
                if (time.isEmpty()) {
                    continue;
                }
                decision = movePolicy.decide(new MovePolicy.Situation(
                        now,
                        time.get().ranFor(),
                        time.get().timeLimit(),
                        Optional.ofNullable(hintedEnds.get(assembly.job())),
                        free,
                        false,
                        candidates));
            }
            switch (decision) {
                case MovePolicy.Decision.Move move -> {
                    reasons.remove(assembly.job());
                    start(assembly, move.vgpu(), assembly.node(), false, now, "hook", move.reason());
                    migrating.add(assembly.job());
                }
                case MovePolicy.Decision.Stay stay -> {
                    String previous = reasons.put(assembly.job(), stay.reason());
                    if (!stay.reason().equals(previous)) {
                        LOG.debug("job {}: hook leaves its vGPUs where they are: {}", assembly.job(), stay.reason());
                    }
                }
            }
        }
    }

    // ------------------------------------------------------------------ admins

    /** {@code vgpu migrate JOB VGPU [NODE]}: moves the vGPU home now, whatever the cost model says. */
    public Reply migrate(
            long job, int vgpu, Optional<String> targetNode, SlurmInventory inventory, Instant now, String who) {
        Optional<Assembly> assembly = ledger.assembly(job);
        if (assembly.isEmpty() || assembly.get().phase() != Assembly.Phase.RELEASED) {
            return Reply.refused("job " + job + " has no running vGPU assembly at this tracker");
        }
        Optional<Lend> lend = lend(assembly.get(), vgpu);
        if (lend.isEmpty()) {
            return Reply.refused("vGPU " + vgpu + " of job " + job + " is not borrowed (job " + job + " borrows "
                    + assembly.get().lends().stream()
                            .filter(l -> !l.home())
                            .map(Lend::vgpu)
                            .toList() + ")");
        }
        if (lend.get().home()) {
            return Reply.refused("vGPU " + vgpu + " of job " + job + " runs on GPU "
                    + lend.get().gpu().getAsInt() + " of its own node "
                    + assembly.get().node() + " already");
        }
        Optional<Migration> under = ledger.migrations().stream()
                .filter(migration -> migration.job() == job)
                .findFirst();
        if (under.isPresent()) {
            return Reply.refused("job " + job + " has migration " + under.get().id() + " (vGPU "
                    + under.get().vgpu() + ") under way; one at a time");
        }
        Optional<String> gone = agentGone(job);
        if (gone.isPresent()) {
            return Reply.refused(gone.get() + "; nothing was started, vGPU " + vgpu + " stays where it is");
        }
        String node = assembly.get().node();
        if (targetNode.isPresent() && !targetNode.get().equals(node)) {
            String lender = targetNode.get();
            if (lender.equals(lend.get().node())) {
                return Reply.refused("vGPU " + vgpu + " of job " + job + " is served from " + lender + " already");
            }
            if (!canLend(inventory, lender)) {
                return Reply.refused("node " + lender + " cannot lend a GPU now (not in the lend partition, or no"
                        + " free GPU and CPU)");
            }
            long id = start(assembly.get(), vgpu, lender, true, now, "admin", "asked by " + who);
            return Reply.ok("migration " + id + " started: vGPU " + vgpu + " of job " + job + " moves from "
                    + lend.get().node() + " to " + lender);
        }
        if (freeGpus(inventory, node).isEmpty()) {
            return Reply.refused("node " + node + " has no free GPU for vGPU " + vgpu + " of job " + job + " now");
        }
        long id = start(assembly.get(), vgpu, node, false, now, "admin", "asked by " + who);
        return Reply.ok("migration " + id + " started: vGPU " + vgpu + " of job " + job + " moves home to " + node);
    }

    /**
     * {@code vgpu drain NODE}: every vGPU served from {@code node} moves home when its job's node has a free GPU;
     * the others are named with why they stay.
     */
    public Reply drain(String node, SlurmInventory inventory, Instant now, String who) {
        List<String> started = new ArrayList<>();
        List<String> staying = new ArrayList<>();
        for (Assembly assembly : ledger.assemblies()) {
            for (Lend lend : assembly.lends()) {
                if (lend.home() || !lend.node().equals(node) || assembly.phase() != Assembly.Phase.RELEASED) {
                    continue;
                }
                Reply reply = moveAway(assembly, lend, inventory, now, who + " (drain " + node + ")", started.size());
                (reply.ok() ? started : staying)
                        .add("job " + assembly.job() + " vGPU " + lend.vgpu() + ": " + reply.text());
            }
        }
        if (started.isEmpty() && staying.isEmpty()) {
            return Reply.ok("node " + node + " serves no borrowed vGPU");
        }
        List<String> all = new ArrayList<>(started);
        all.addAll(staying);
        String summary = started.size() + " moving, " + staying.size() + " staying: " + String.join("; ", all);
        return started.isEmpty() ? Reply.refused("nothing moves off " + node + ": " + summary) : Reply.ok(summary);
    }

    /**
     * A holder's worker leaving: its holder job is being cancelled ({@code scancel} sends the worker SIGTERM, and
     * Slurm waits KillWait before SIGKILL), so its vGPU moves away at once as {@link #drain} would move it (home when
     * the job's node has a free GPU, else to the nearest other lender), whatever the policy, a pause or a cooldown
     * say. When nothing can take it, the vGPU is lost with its holder: {@link #onLost} is told why, as it is when
     * the evacuation started but does not succeed.
     *
     * @return the move started (or already under way), or refused with why nothing moves the vGPU
     */
    public Reply evacuate(long job, int vgpu, long holder, SlurmInventory inventory, Instant now) {
        Optional<Assembly> assembly = ledger.assembly(job);
        Optional<Lend> lend = assembly.flatMap(current -> lend(current, vgpu));
        if (assembly.isEmpty() || lend.isEmpty()) {
            return Reply.refused("job " + job + " has no borrowed vGPU " + vgpu);
        }
        Optional<Migration> under = ledger.migrations().stream()
                .filter(migration -> migration.job() == job && migration.vgpu() == vgpu)
                .findFirst();
        if (under.isPresent()) {
            evacuations.add(under.get().id());
            return Reply.ok(
                    "migration " + under.get().id() + " of vGPU " + vgpu + " of job " + job + " is under way already");
        }
        Reply reply = moveAway(assembly.get(), lend.get(), inventory, now, "the cancel of holder " + holder, 0);
        if (reply.ok()) {
            ledger.migrations().stream()
                    .filter(migration -> migration.job() == job && migration.vgpu() == vgpu)
                    .forEach(migration -> evacuations.add(migration.id()));
        } else {
            boolean noLender = freeGpus(inventory, assembly.get().node()).isEmpty();
            lost.accept(new Lost(
                    job,
                    vgpu,
                    "its holder " + holder + " is being cancelled and it cannot be evacuated: " + reply.text()
                            + (noLender ? ", and no other node can lend a GPU" : "")));
        }
        return reply;
    }

    /** A borrowed vGPU that dies with its cancelled holder, and why: the tracker tells the job, its log and report. */
    public record Lost(long job, int vgpu, String reason) {}

    /** Told of every vGPU an evacuation cannot save, under the tracker's lock: it must not block. */
    public void onLost(Consumer<Lost> listener) {
        lost = Objects.requireNonNull(listener, "listener");
    }

    /** Moves {@code lend} off its lender: home when the job's node has a free GPU, else to the nearest other lender. */
    private Reply moveAway(
            Assembly assembly, Lend lend, SlurmInventory inventory, Instant now, String who, int takenLenders) {
        Optional<String> target = freeGpus(inventory, assembly.node()).isEmpty()
                ? nearestLender(inventory, assembly.node(), lend.node(), takenLenders)
                : Optional.empty();
        return migrate(assembly.job(), lend.vgpu(), target, inventory, now, who);
    }

    /** An evacuation that ended without moving its vGPU: the vGPU dies with its holder. */
    private void evacuationFailed(Migration migration, String why) {
        if (evacuations.remove(migration.id())) {
            lost.accept(new Lost(
                    migration.job(),
                    migration.vgpu(),
                    "its holder is being cancelled and its evacuation (migration " + migration.id() + ") failed: "
                            + why));
        }
    }

    // ------------------------------------------------------------------ steps

    private long start(
            Assembly assembly, int vgpu, String node, boolean remote, Instant now, String by, String reason) {
        long id = ledger.nextMigrationId();
        Lend lend = lend(assembly, vgpu).orElseThrow();
        Migration intent = Migration.intent(id, assembly.job(), vgpu, node, remote, now, by);
        ledger.record(intent);
        String from = lend.node() + ":"
                + (lend.gpu().isPresent() ? Integer.toString(lend.gpu().getAsInt()) : "?");
        moves.put(
                id,
                new MoveRecord(
                        id,
                        assembly.job(),
                        vgpu,
                        from,
                        target(intent),
                        remote ? "remote" : "home",
                        by,
                        reason,
                        now,
                        "claiming",
                        0,
                        0,
                        Optional.empty(),
                        "claiming a GPU of " + node));
        trimHistory();
        long grant = remote
                ? slurm.submitHolder(node, assembly.job(), vgpu, lenders.holderScript(assembly.job(), vgpu, node))
                : slurm.submitGrant(node, assembly.job(), vgpu);
        ledger.record(intent.withGrant(grant));
        LOG.info(
                "migration {}: vGPU {} of job {} from {} to {} ({}: {}); {} {} submitted",
                id,
                vgpu,
                assembly.job(),
                from,
                node,
                by,
                reason,
                remote ? "holder" : "grant holder",
                grant);
        return id;
    }

    private void claim(Migration migration, SlurmInventory inventory, Instant now) {
        if (migration.grant().isEmpty()) {
            // Submitting it failed, or the tracker stopped in between: an orphan is cancelled as unknown.
            giveUp(migration, now, "the grant holder was not submitted");
            return;
        }
        long grant = migration.grant().getAsLong();
        Optional<SlurmJob> holder = inventory.job(grant);
        // Slurm lists a job from the moment sbatch answers until MinJobAge after its end. A grant this look does not
        // list was submitted after the look was taken (an admin's move lands between a tick's look and its turn) or
        // ended long ago; it waits as a pending one does, and the grant timeout ends both.
        String state = holder.map(SlurmJob::state).orElse("PENDING");
        if (state.equals("PENDING") || state.equals("CONFIGURING")) {
            if (Duration.between(migration.started(), now).compareTo(bounds.grantTimeout()) > 0) {
                cancel(List.of(grant));
                giveUp(
                        migration,
                        now,
                        "grant holder " + grant
                                + (holder.isEmpty()
                                        ? " was not listed by Slurm within "
                                                + bounds.grantTimeout().toSeconds() + " s"
                                        : " did not start within "
                                                + bounds.grantTimeout().toSeconds()
                                                + " s (Slurm gave the GPU to another job first?)")
                                + "; trying again later");
            }
            return;
        }
        if (!state.equals("RUNNING")) {
            cancel(List.of(grant));
            giveUp(migration, now, "grant holder " + grant + " is " + state + " before it ran");
            return;
        }
        List<Integer> gpus = holder.get().gpuIndicesOn(migration.node());
        if (gpus.size() != 1) {
            cancel(List.of(grant));
            giveUp(migration, now, "grant holder " + grant + " holds GPU(s) " + gpus + ", expected exactly one");
            return;
        }
        if (migration.remote() && migration.worker().isEmpty()) {
            // Its worker has not announced itself yet; the grant timeout bounds the wait from the start.
            if (Duration.between(migration.started(), now).compareTo(bounds.grantTimeout()) > 0) {
                cancel(List.of(grant));
                giveUp(
                        migration,
                        now,
                        "the worker of holder " + grant + " did not start within "
                                + bounds.grantTimeout().toSeconds() + " s");
            }
            return;
        }
        Migration sent = migration.sentAt(gpus.getFirst(), now);
        ledger.record(sent);
        AgentChannel.Target target = migration.worker().isPresent()
                ? new AgentChannel.RemoteTarget(
                        migration.worker().get().endpoint(),
                        lenders.token(
                                migration.job(),
                                migration.vgpu(),
                                migration.worker().get().id()))
                : new AgentChannel.LocalGpu(gpus.getFirst());
        mailbox.post(migration.job(), new AgentMailbox.Order(migration.id(), migration.vgpu(), target));
        String ready =
                migration.remote() ? "worker ready on GPU " + gpus.getFirst() : "GPU " + gpus.getFirst() + " granted";
        remember(
                migration.id(),
                move -> move.to(target(sent)).in("sent", ready + "; command queued for the job's agent"));
        LOG.info(
                "migration {}: {} on {}; migrate {} {} {} queued for job {}'s agent",
                migration.id(),
                ready,
                migration.node(),
                migration.id(),
                migration.vgpu(),
                migration.remote() ? migration.worker().get().describe() : "local:" + gpus.getFirst(),
                migration.job());
    }

    private void awaitDone(Migration migration, Instant now) {
        Instant sent = migration.sent().orElseThrow();
        if (Duration.between(sent, now).compareTo(bounds.migrationTimeout()) <= 0) {
            return;
        }
        // No done in time: the vGPU's place since the command decides, never a guess.
        if (mailbox.withdraw(migration.job(), migration.id())) {
            // No agent ever took the command (it is posted once, when sent): the vGPU cannot have left.
            fail(
                    migration,
                    now,
                    "no agent of the job took the command within "
                            + bounds.migrationTimeout().toSeconds()
                            + " s (its app ended, or does not run vgpu run); the vGPU never left");
            return;
        }
        Optional<Report> report = Optional.ofNullable(
                        reports.getOrDefault(migration.job(), Map.of()).get(migration.vgpu()))
                .filter(candidate -> candidate.at().isAfter(sent));
        if (report.isEmpty()) {
            if (silentNoted.add(migration.id())) {
                LOG.warn(
                        "migration {}: job {}'s agent has not answered within {} s; its lender's and its grant"
                                + " holder's GPUs both stay held until it reports or the job ends",
                        migration.id(),
                        migration.job(),
                        bounds.migrationTimeout().toSeconds());
                remember(migration.id(), move -> move.in("sent", "the agent is silent; both GPUs stay held"));
            }
            return;
        }
        AgentChannel.Where where = report.get().stat().where();
        boolean arrived = migration.worker().isPresent()
                ? where.equals(
                        new AgentChannel.RemoteWorker(migration.worker().get().endpoint()))
                : where.equals(new AgentChannel.LocalGpu(migration.gpu().getAsInt()));
        if (arrived) {
            succeed(
                    migration,
                    0,
                    0,
                    now,
                    "the agent reports it at "
                            + migration.worker().map(Migration.Worker::describe).orElse(where.format())
                            + " (no done received)");
        } else {
            fail(
                    migration,
                    now,
                    "no done within " + bounds.migrationTimeout().toSeconds()
                            + " s and the agent reports it still where it was");
        }
    }

    private void succeed(Migration migration, long blockedMs, long bytes, Instant now, String how) {
        Assembly assembly = ledger.assembly(migration.job()).orElseThrow();
        Lend lend = lend(assembly, migration.vgpu()).orElseThrow();
        long grant = migration.grant().getAsLong();
        int gpu = migration.gpu().getAsInt();
        // Ledger first: a tracker stopped after this line finds the lend home and its outcome missing (advance).
        Lend moved = migration.worker().isPresent()
                ? lend.movedTo(
                        migration.node(),
                        grant,
                        gpu,
                        migration.worker().get().endpoint(),
                        migration.worker().get().id())
                : lend.movedHome(assembly.node(), grant, gpu);
        ledger.record(assembly.withLend(moved));
        ledger.finish(new MigrationOutcome(
                migration.id(), migration.job(), migration.vgpu(), MigrationOutcome.Result.OK, blockedMs, bytes, now));
        evacuations.remove(migration.id());
        lend.holder().ifPresent(holder -> cancel(List.of(holder)));
        // Its counters were the remote's: the agent's next poll says what runs where now.
        reports.getOrDefault(migration.job(), new HashMap<>()).remove(migration.vgpu());
        remember(migration.id(), move -> move.endedAt(now, "ok", blockedMs, bytes, how));
        LOG.info(
                "migration {}: vGPU {} of job {} runs on GPU {} of {} via {} {} ({}; blocked {} ms, {} bytes);"
                        + " the former lender's holder {} cancelled",
                migration.id(),
                migration.vgpu(),
                migration.job(),
                gpu,
                migration.node(),
                migration.remote() ? "holder" : "grant holder",
                grant,
                how,
                blockedMs,
                bytes,
                lend.holder().isPresent() ? Long.toString(lend.holder().getAsLong()) : "-");
    }

    private void fail(Migration migration, Instant now, String why) {
        evacuationFailed(migration, why);
        mailbox.withdraw(migration.job(), migration.id());
        migration.grant().ifPresent(grant -> cancel(List.of(grant)));
        ledger.finish(new MigrationOutcome(
                migration.id(), migration.job(), migration.vgpu(), MigrationOutcome.Result.FAILED, 0, 0, now));
        remember(migration.id(), move -> move.endedAt(now, "failed", 0, 0, why));
        LOG.warn(
                "migration {}: vGPU {} of job {} stays remote: {}; grant holder cancelled, no new move before {}",
                migration.id(),
                migration.vgpu(),
                migration.job(),
                why,
                now.plus(policy.cooldown()));
    }

    private void giveUp(Migration migration, Instant now, String why) {
        evacuationFailed(migration, why);
        mailbox.withdraw(migration.job(), migration.id());
        ledger.finish(new MigrationOutcome(
                migration.id(), migration.job(), migration.vgpu(), MigrationOutcome.Result.GAVE_UP, 0, 0, now));
        remember(migration.id(), move -> move.endedAt(now, "gave-up", 0, 0, why));
        LOG.info(
                "migration {}: vGPU {} of job {} stays where it is: {}",
                migration.id(),
                migration.vgpu(),
                migration.job(),
                why);
    }

    private void cancel(List<Long> holders) {
        if (!holders.isEmpty()) {
            slurm.cancel(holders);
            holders.forEach(holderCancelled);
        }
    }

    private Optional<MovePolicy.Counters> counters(long job, int vgpu) {
        Report report = reports.getOrDefault(job, Map.of()).get(vgpu);
        if (report == null || !(report.stat().where() instanceof AgentChannel.RemoteWorker)) {
            return Optional.empty();
        }
        return Optional.of(new MovePolicy.Counters(
                report.stat().remoteWaitMs(), report.stat().liveBytes()));
    }

    /** GPU indices of {@code node} that no job holds, from Slurm's view (the idle grace does not apply to moves home). */
    private static List<Integer> freeGpus(SlurmInventory inventory, String node) {
        Optional<SlurmNode> view = inventory.node(node);
        if (view.isEmpty() || !view.get().schedulable()) {
            return List.of();
        }
        Set<Integer> used = new HashSet<>();
        for (SlurmJob job : inventory.jobs()) {
            if (job.state().equals("RUNNING") || job.state().equals("CONFIGURING")) {
                used.addAll(job.gpuIndicesOn(node));
            }
        }
        int gpus = view.get().configured().getOrDefault(SlurmJob.GPU, 0);
        List<Integer> free = new ArrayList<>();
        for (int gpu = 0; gpu < gpus; gpu++) {
            if (!used.contains(gpu)) {
                free.add(gpu);
            }
        }
        // Slurm's count is the last word: it also counts GPUs taken without indices shown.
        return free.size() > view.get().idle(SlurmJob.GPU)
                ? free.subList(0, view.get().idle(SlurmJob.GPU))
                : free;
    }

    /** Whether {@code node} can run a holder now: in the lend partition, a free GPU and a free CPU. */
    private boolean canLend(SlurmInventory inventory, String node) {
        Optional<SlurmNode> view = inventory.node(node);
        return view.isPresent()
                && view.get().partitions().contains(lenders.partition())
                && view.get().idleCpus() > 0
                && !freeGpus(inventory, node).isEmpty();
    }

    /**
     * The lender nearest to {@code jobNode} (site distances, then name) other than {@code draining} that can lend,
     * skipping the first {@code taken} such (GPUs this drain claimed already).
     */
    private Optional<String> nearestLender(SlurmInventory inventory, String jobNode, String draining, int taken) {
        return inventory.nodes().stream()
                .map(SlurmNode::name)
                .filter(name -> !name.equals(jobNode) && !name.equals(draining))
                .filter(name -> canLend(inventory, name))
                .sorted(Comparator.comparingInt((String name) -> lenders.distance(jobNode, name))
                        .thenComparing(Comparator.naturalOrder()))
                .skip(taken)
                .findFirst();
    }

    /** Why job {@code job}'s agent cannot take a migration, when it polled before and has stopped. */
    private Optional<String> agentGone(long job) {
        if (mailbox.left(job)) {
            return Optional.of("job " + job + "'s migration agent stopped: its app ended (an agent of a later step"
                    + " polls anew)");
        }
        return mailbox.silentFor(job)
                .filter(silent -> silent.compareTo(AGENT_GONE_AFTER) > 0)
                .map(silent -> "job " + job + "'s migration agent stopped polling the tracker " + silent.toSeconds()
                        + " s ago (its app ended or was killed)");
    }

    private static Optional<Lend> lend(Assembly assembly, int vgpu) {
        return assembly.lends().stream().filter(lend -> lend.vgpu() == vgpu).findFirst();
    }

    private static String target(Migration migration) {
        return migration.node() + ":"
                + (migration.gpu().isPresent()
                        ? Integer.toString(migration.gpu().getAsInt())
                        : "?");
    }

    private static String state(Migration migration) {
        return migration.phase() == Migration.Phase.CLAIMING ? "claiming" : "sent";
    }

    private void remember(long id, UnaryOperator<MoveRecord> change) {
        MoveRecord before = moves.get(id);
        if (before == null) {
            return;
        }
        MoveRecord after = change.apply(before);
        moves.put(id, after);
        if (after.finished() && !before.finished()) {
            onEnded.accept(after);
        }
    }

    private void trimHistory() {
        var iterator = moves.entrySet().iterator();
        while (moves.size() > HISTORY && iterator.hasNext()) {
            if (iterator.next().getValue().finished()) {
                iterator.remove();
            }
        }
    }
}
