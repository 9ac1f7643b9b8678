package org.vgpu.tracker.hook;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.siteconfig.MigrationPolicy;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.ledger.MigrationOutcome;
import org.vgpu.tracker.placement.Availability;
import org.vgpu.tracker.slurm.JobTime;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;

/**
 * The tracker's migration hook: moves borrowed vGPUs of running jobs onto GPUs freed on the jobs' own nodes when the
 * cost model says the move pays ({@link MovePolicy}), and carries out the moves admins ask for. The tracker's one
 * door to its parts: the {@link MoveMachine} carries each migration from its start to its end (its class comment
 * tells the steps), {@link AdminMoves} answers admins' moves, drains, pauses and the evacuation of cancelled
 * holders, {@link AgentReports} keeps what the jobs' agents report, and {@link MoveHistory} what {@code vgpu report}
 * shows of each migration. This class decides the hook's own moves.
 *
 * <p>Not thread-safe: the tracker calls it under its lock. Only {@link AgentMailbox#take} waits, outside it.
 */
public final class MigrationHook {
    private static final Logger LOG = LoggerFactory.getLogger(MigrationHook.class);

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

    /** A reply to an admin's request: {@code ok} with text, or refused with a reason. */
    public record Reply(boolean ok, String text) {
        static Reply ok(String text) {
            return new Reply(true, text);
        }

        static Reply refused(String reason) {
            return new Reply(false, reason);
        }
    }

    /** A borrowed vGPU that dies with its cancelled holder, and why: the tracker tells the job, its log and report. */
    public record Lost(long job, int vgpu, String reason) {}

    private final MigrationPolicy policy;
    private final MovePolicy movePolicy;
    private final SlurmControl slurm;
    private final Ledger ledger;
    private final Bounds bounds;
    private final AgentMailbox mailbox = new AgentMailbox();
    private final AgentReports reports;
    private final MoveHistory history;
    private final MoveMachine machine;
    private final AdminMoves admin;

    private final Map<Long, String> reasons = new HashMap<>();
    /** The free GPUs of each job's node at the hook's last look: a newly freed one asks the agent for fresh figures. */
    private final Map<Long, Set<Integer>> freeSeen = new HashMap<>();

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
        this.bounds = Objects.requireNonNull(bounds, "bounds");
        this.reports = new AgentReports(ledger, key, mailbox);
        this.history = new MoveHistory(ledger);
        this.machine =
                new MoveMachine(policy, slurm, ledger, bounds, holderCancelled, lenders, mailbox, reports, history);
        this.admin = new AdminMoves(ledger, lenders, reports, machine);
    }

    public AgentMailbox mailbox() {
        return mailbox;
    }

    public boolean paused() {
        return admin.paused();
    }

    /** {@code vgpu hook pause|resume}: a paused hook starts no migration of its own; those under way go on. */
    public Reply pause(boolean pause, String who) {
        return admin.pause(pause, who);
    }

    /** Told of each migration as it ends (for the tracker's metrics), under the tracker's lock: it must not block. */
    public void onEnded(Consumer<MoveRecord> listener) {
        history.onEnded(listener);
    }

    /** What the job's agent last reported of each of its vGPUs, by vGPU. */
    public Map<Integer, AgentChannel.Stat> stats(long job) {
        return reports.stats(job);
    }

    /** Migrations under way and recently ended, oldest first. */
    public List<MoveRecord> moves() {
        return history.all();
    }

    public Optional<MoveRecord> move(long id) {
        return history.get(id);
    }

    /** Why the hook leaves a job's borrowed vGPUs where they are, as last decided. */
    public Optional<String> reason(long job) {
        return Optional.ofNullable(reasons.get(job));
    }

    /** The grant holders of migrations under way: the tracker's own jobs. */
    public Set<Long> grants() {
        return machine.grants();
    }

    /** Takes from {@code free} the GPUs of grant holders Slurm does not show running yet. */
    public void reserve(Availability free, SlurmInventory inventory) {
        machine.reserve(free, inventory);
    }

    /** A job's assembly ends: its grant holders are cancelled with its other holders, nothing more is sent to it. */
    public void endJob(long job, Instant now) {
        machine.endJob(job, now);
        reports.forget(job);
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
        return reports.refusal(job, vgpu, token);
    }

    /**
     * Keeps what an authenticated poll says of the job's vGPUs: the cost model's counters, where each vGPU runs
     * (what settles a migration whose {@code done} never came), and the job's end as its user hints it.
     */
    public void report(long job, List<AgentChannel.Stat> stats, Optional<Instant> hintedEnd, Instant now) {
        reports.report(job, stats, hintedEnd, now);
    }

    /**
     * A worker announcing itself for vGPU {@code vgpu} of job {@code job} (its proof already checked): taken when it
     * runs in the holder of a move to another lender ({@code NODE-holder-HOLDER} names it).
     *
     * @return whether a migration took it
     */
    public boolean announce(long job, int vgpu, Endpoint endpoint, String workerId) {
        return machine.announce(job, vgpu, endpoint, workerId);
    }

    /** The agent's {@code done} for migration {@code id}, authenticated as job {@code job}. */
    public AgentChannel.DoneReply done(long job, long id, AgentChannel.Outcome outcome, Instant now) {
        return machine.done(job, id, outcome, now);
    }

    /**
     * The agent's {@code bye}, authenticated as job {@code job} and vGPU {@code credentialVgpu}: its app ends. A command queued for it that no poll
     * took can never run: its migration fails now (grant cancelled, the vGPU stays where it is) instead of at the
     * migration timeout. A command already taken is left to the agent's {@code done} or that timeout, because the
     * agent may have acted on it.
     */
    public AgentChannel.DoneReply bye(long job, int credentialVgpu, Instant now) {
        return machine.bye(job, credentialVgpu, now);
    }

    // ------------------------------------------------------------------ each tick

    /** Moves every migration under way forward (see {@link MoveMachine}). */
    public void advance(SlurmInventory inventory, Instant now) {
        machine.advance(inventory, now);
    }

    /** Starts a move home for every released job whose node has a free GPU now and whose move pays. */
    public void decide(SlurmInventory inventory, Instant now) {
        if (admin.paused() || !policy.migrateHome()) {
            return;
        }
        Set<Long> migrating = new HashSet<>();
        ledger.migrations().forEach(migration -> migrating.add(migration.job()));
        for (Assembly assembly : ledger.assemblies()) {
            List<Lend> remote = assembly.borrowedLends();
            if (assembly.phase() != Assembly.Phase.RELEASED || remote.isEmpty() || migrating.contains(assembly.job())) {
                continue;
            }
            // Each task of a step may have its own agent (AgentMailbox): a vGPU whose agent has gone stays out.
            List<Lend> reachable = new ArrayList<>();
            Optional<String> gone = Optional.empty();
            for (Lend lend : remote) {
                Optional<String> why = reports.agentGone(assembly.job(), lend.vgpu());
                if (why.isEmpty()) {
                    reachable.add(lend);
                } else if (gone.isEmpty()) {
                    gone = why;
                }
            }
            if (reachable.isEmpty()) {
                reasons.put(assembly.job(), gone.orElseThrow());
                continue;
            }
            List<Integer> free = FreeGpus.on(inventory, assembly.node());
            Set<Integer> before = freeSeen.put(assembly.job(), Set.copyOf(free));
            if (!(before == null ? Set.of() : before).containsAll(free)) {
                // A GPU was just released here: the agent's next report, at once, carries today's counters.
                mailbox.nudge(assembly.job());
            }
            List<MovePolicy.Candidate> candidates = new ArrayList<>();
            for (Lend lend : reachable) {
                Optional<MigrationOutcome> last = ledger.lastOutcome(assembly.job(), lend.vgpu());
                if (last.isPresent()
                        && last.get().result() == MigrationOutcome.Result.GAVE_UP
                        && now.isBefore(last.get().at().plus(bounds.grantTimeout()))) {
                    continue;
                }
                candidates.add(new MovePolicy.Candidate(
                        lend.vgpu(),
                        reports.counters(assembly.job(), lend.vgpu()),
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
                        reports.hintedEnd(assembly.job()),
                        free,
                        false,
                        candidates));
            }
            switch (decision) {
                case MovePolicy.Decision.Move move -> {
                    reasons.remove(assembly.job());
                    machine.start(assembly, move.vgpu(), assembly.node(), false, now, "hook", move.reason());
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
        return admin.migrate(job, vgpu, targetNode, inventory, now, who);
    }

    /**
     * {@code vgpu drain NODE}: every vGPU served from {@code node} moves home when its job's node has a free GPU;
     * the others are named with why they stay.
     */
    public Reply drain(String node, SlurmInventory inventory, Instant now, String who) {
        return admin.drain(node, inventory, now, who);
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
        return admin.evacuate(job, vgpu, holder, inventory, now);
    }

    /** Told of every vGPU an evacuation cannot save, under the tracker's lock: it must not block. */
    public void onLost(Consumer<Lost> listener) {
        machine.onLost(listener);
    }
}
