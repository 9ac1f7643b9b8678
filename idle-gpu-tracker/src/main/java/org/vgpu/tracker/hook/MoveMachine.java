package org.vgpu.tracker.hook;

import static org.vgpu.common.contract.BridgeContract.MOVE_CLAIMING;
import static org.vgpu.common.contract.BridgeContract.MOVE_FAILED;
import static org.vgpu.common.contract.BridgeContract.MOVE_GAVE_UP;
import static org.vgpu.common.contract.BridgeContract.MOVE_OK;
import static org.vgpu.common.contract.BridgeContract.MOVE_SENT;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.MigrationPolicy;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.ledger.Migration;
import org.vgpu.tracker.ledger.MigrationOutcome;
import org.vgpu.tracker.placement.Availability;
import org.vgpu.tracker.slurm.SlurmControl;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * The move state machine: carries each migration, whoever started it, from its start to its end. Each migration
 * goes, journaled in the ledger before each step acts:
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
 * A command no agent took within the migration timeout fails (the vGPU cannot have left). A migration an earlier run
 * of the tracker sent is settled by the agent's first report of its vGPU since this run started, without waiting for
 * the timeout: its command died with that run, taken or not, and an agent reports its vGPUs only between moves,
 * having told the outcome of a move before it polls again. The last outcome of each vGPU (any result but gave-up)
 * starts its cooldown.
 *
 * <p>A migration that evacuates a vGPU from a holder being cancelled and ends without moving it loses the vGPU: the
 * listener of {@link #onLost} is told. Not thread-safe: the tracker calls it under its lock.
 */
final class MoveMachine {
    // The hook's log, as admins know it: its parts write under one name.
    private static final Logger LOG = LoggerFactory.getLogger(MigrationHook.class);

    private final MigrationPolicy policy;
    private final SlurmControl slurm;
    private final Ledger ledger;
    private final MigrationHook.Bounds bounds;
    private final Consumer<Long> holderCancelled;
    private final MigrationHook.Lenders lenders;
    private final AgentMailbox mailbox;
    private final AgentReports reports;
    private final MoveHistory history;
    private final Set<Long> silentNoted = new HashSet<>();
    /** Migrations that evacuate a vGPU from a holder being cancelled: one that fails loses the vGPU. */
    private final Set<Long> evacuations = new HashSet<>();
    /** Migrations an earlier run of the tracker sent: no mailbox of this run holds their commands. */
    private final Set<Long> sentByAnEarlierRun = new HashSet<>();

    private Consumer<MigrationHook.Lost> lost = vgpu -> {};

    MoveMachine(
            MigrationPolicy policy,
            SlurmControl slurm,
            Ledger ledger,
            MigrationHook.Bounds bounds,
            Consumer<Long> holderCancelled,
            MigrationHook.Lenders lenders,
            AgentMailbox mailbox,
            AgentReports reports,
            MoveHistory history) {
        this.policy = Objects.requireNonNull(policy, "policy");
        this.slurm = Objects.requireNonNull(slurm, "slurm");
        this.ledger = Objects.requireNonNull(ledger, "ledger");
        this.bounds = Objects.requireNonNull(bounds, "bounds");
        this.holderCancelled = Objects.requireNonNull(holderCancelled, "holderCancelled");
        this.lenders = Objects.requireNonNull(lenders, "lenders");
        this.mailbox = Objects.requireNonNull(mailbox, "mailbox");
        this.reports = Objects.requireNonNull(reports, "reports");
        this.history = Objects.requireNonNull(history, "history");
        ledger.migrations().stream()
                .filter(migration -> migration.phase() == Migration.Phase.SENT)
                .forEach(migration -> sentByAnEarlierRun.add(migration.id()));
    }

    /** Told of every vGPU an evacuation cannot save, under the tracker's lock: it must not block. */
    void onLost(Consumer<MigrationHook.Lost> listener) {
        lost = Objects.requireNonNull(listener, "listener");
    }

    /** Tells the listener of {@link #onLost} of a vGPU that dies with its holder. */
    void lose(MigrationHook.Lost vgpu) {
        lost.accept(vgpu);
    }

    /** Migration {@code id} evacuates its vGPU from a holder being cancelled: if it fails, the vGPU is lost. */
    void evacuating(long id) {
        evacuations.add(id);
    }

    /** The grant holders of migrations under way: the tracker's own jobs. */
    Set<Long> grants() {
        Set<Long> grants = new HashSet<>();
        ledger.migrations().forEach(migration -> migration.grant().ifPresent(grants::add));
        return grants;
    }

    /** Takes from {@code free} the GPUs of grant holders Slurm does not show running yet. */
    void reserve(Availability free, SlurmInventory inventory) {
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
    void endJob(long job, Instant now) {
        List<Long> grants = new ArrayList<>();
        for (Migration migration : ledger.migrations()) {
            if (migration.job() == job) {
                evacuations.remove(migration.id());
                migration.grant().ifPresent(grants::add);
                history.change(migration.id(), move -> move.endedAt(now, MOVE_GAVE_UP, 0, 0, "the job ended"));
            }
        }
        if (!grants.isEmpty()) {
            LOG.info("job {} ended during its migration: grant holder(s) {} cancelled", job, grants);
        }
        cancel(grants);
        mailbox.clear(job);
    }

    /** See {@link MigrationHook#announce}. */
    boolean announce(long job, int vgpu, Endpoint endpoint, String workerId) {
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

    /** See {@link MigrationHook#done}. */
    AgentChannel.DoneReply done(long job, long id, AgentChannel.Outcome outcome, Instant now) {
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

    /** See {@link MigrationHook#bye}. */
    AgentChannel.DoneReply bye(long job, int credentialVgpu, Instant now) {
        Set<Integer> itsVgpus = mailbox.spokenFor(job, credentialVgpu);
        mailbox.leave(job, credentialVgpu);
        for (Migration migration : ledger.migrations()) {
            if (migration.job() == job
                    && itsVgpus.contains(migration.vgpu())
                    && migration.phase() == Migration.Phase.SENT
                    && mailbox.withdraw(job, migration.id())) {
                fail(migration, now, "the job's app ended before its agent took the command");
            }
        }
        return new AgentChannel.Accepted();
    }

    /** Moves every migration under way forward (see the class comment). */
    void advance(SlurmInventory inventory, Instant now) {
        for (Migration migration : ledger.migrations()) {
            Optional<Assembly> assembly = ledger.assembly(migration.job());
            Optional<Lend> lend = assembly.flatMap(current -> current.lend(migration.vgpu()));
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
                history.change(
                        migration.id(), move -> move.endedAt(now, MOVE_OK, 0, 0, "home (recorded before a restart)"));
            } else {
                awaitDone(migration, now);
            }
        }
    }

    /**
     * Starts moving vGPU {@code vgpu} of {@code assembly} to {@code node}: home onto a grant holder's GPU, or, when
     * {@code remote}, to a new holder's worker there.
     *
     * @return the migration's id
     */
    long start(Assembly assembly, int vgpu, String node, boolean remote, Instant now, String by, String reason) {
        long id = ledger.nextMigrationId();
        Lend lend = assembly.lend(vgpu).orElseThrow();
        Migration intent = Migration.intent(id, assembly.job(), vgpu, node, remote, now, by);
        ledger.record(intent);
        String from = lend.node() + ":"
                + (lend.gpu().isPresent() ? Integer.toString(lend.gpu().getAsInt()) : "?");
        history.started(new MoveRecord(
                id,
                assembly.job(),
                vgpu,
                from,
                MoveHistory.target(intent),
                remote ? "remote" : "home",
                by,
                reason,
                now,
                MOVE_CLAIMING,
                0,
                0,
                Optional.empty(),
                "claiming a GPU of " + node));
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
        history.change(
                migration.id(),
                move -> move.to(MoveHistory.target(sent))
                        .in(MOVE_SENT, ready + "; command queued for the job's agent"));
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
        if (sentByAnEarlierRun.contains(migration.id())) {
            Optional<AgentReports.Report> report = reports.after(migration.job(), migration.vgpu(), sent);
            if (report.isPresent()) {
                settleWhereItRuns(
                        migration,
                        report.get().stat().where(),
                        now,
                        "sent before the tracker restarted, and the agent's first report since",
                        "the tracker restarted after sending the command and the agent's first report since shows it"
                                + " still where it was");
                return;
            }
        }
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
        Optional<AgentReports.Report> report = reports.after(migration.job(), migration.vgpu(), sent);
        if (report.isEmpty()) {
            if (silentNoted.add(migration.id())) {
                LOG.warn(
                        "migration {}: job {}'s agent has not answered within {} s; its lender's and its grant"
                                + " holder's GPUs both stay held until it reports or the job ends",
                        migration.id(),
                        migration.job(),
                        bounds.migrationTimeout().toSeconds());
                history.change(migration.id(), move -> move.in(MOVE_SENT, "the agent is silent; both GPUs stay held"));
            }
            return;
        }
        settleWhereItRuns(
                migration,
                report.get().stat().where(),
                now,
                "no done received",
                "no done within " + bounds.migrationTimeout().toSeconds()
                        + " s and the agent reports it still where it was");
    }

    /** Ends a migration whose {@code done} never came by where the agent reports its vGPU: moved, or still not. */
    private void settleWhereItRuns(
            Migration migration, AgentChannel.Where where, Instant now, String howArrived, String whyNot) {
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
                            + " (" + howArrived + ")");
        } else {
            fail(migration, now, whyNot);
        }
    }

    private void succeed(Migration migration, long blockedMs, long bytes, Instant now, String how) {
        Assembly assembly = ledger.assembly(migration.job()).orElseThrow();
        Lend lend = assembly.lend(migration.vgpu()).orElseThrow();
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
        reports.moved(migration.job(), migration.vgpu());
        history.change(migration.id(), move -> move.endedAt(now, MOVE_OK, blockedMs, bytes, how));
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
        history.change(migration.id(), move -> move.endedAt(now, MOVE_FAILED, 0, 0, why));
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
        history.change(migration.id(), move -> move.endedAt(now, MOVE_GAVE_UP, 0, 0, why));
        LOG.info(
                "migration {}: vGPU {} of job {} stays where it is: {}",
                migration.id(),
                migration.vgpu(),
                migration.job(),
                why);
    }

    /** An evacuation that ended without moving its vGPU: the vGPU dies with its holder. */
    private void evacuationFailed(Migration migration, String why) {
        if (evacuations.remove(migration.id())) {
            lost.accept(new MigrationHook.Lost(
                    migration.job(),
                    migration.vgpu(),
                    "its holder is being cancelled and its evacuation (migration " + migration.id() + ") failed: "
                            + why));
        }
    }

    private void cancel(List<Long> holders) {
        if (!holders.isEmpty()) {
            slurm.cancel(holders);
            holders.forEach(holderCancelled);
        }
    }
}
