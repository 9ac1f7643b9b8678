package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.common.security.TokenIssuer;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.hook.MigrationHook;
import org.vgpu.tracker.hook.MoveRecord;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.ledger.Migration;
import org.vgpu.tracker.ledger.MigrationOutcome;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportTable;
import org.vgpu.tracker.server.MungeVerifier;
import org.vgpu.tracker.server.TrackerDaemon;
import org.vgpu.tracker.server.TrackerProtocol;

/**
 * The migration hook against {@link InMemorySlurm}: a job assembled from GPU 3 of n1 and GPUs lent by n2 and n3
 * whose neighbours on n1 end, so GPUs 0..2 of n1 free up. The agent is played by calls of the channel's codec.
 */
class MigrationHookTest {
    private static final Instant START = Instant.parse("2026-11-21T12:00:00Z");
    private static final String NONCE = "0123456789abcdef0123";
    private static final MigrationHook.Bounds BOUNDS =
            new MigrationHook.Bounds(Duration.ofSeconds(30), Duration.ofMinutes(10));

    @TempDir
    Path dir;

    private ThrowawaySiteKey key;
    private final InMemorySlurm slurm = new InMemorySlurm();
    private final Clock clock = new Clock() {
        @Override
        public Instant instant() {
            return now;
        }

        @Override
        public ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }
    };
    private Instant now = START;
    private SiteConfig site;
    private Ledger ledger;
    private final List<Long> fillers = new ArrayList<>();
    private long job;
    private final Map<Integer, String> tokens = new HashMap<>();

    @BeforeEach
    void assembled() throws IOException {
        key = ThrowawaySiteKey.create("hook-test");
        site = TestCluster.configure(dir, key, slurm, "migration_cooldown = 5m\nmigration_end_guard = 5m\n", "");
        for (String node : TestCluster.NODES) {
            fillers.add(slurm.runOn(node, List.of(0, 1, 2), 3));
        }
        ledger = Ledger.open(dir.resolve("tracker.ledger"));

        job = slurm.submitVgpuJob(3);
        Tracker tracker = tracker();
        tracker.tick();
        now = now.plusSeconds(11);
        tracker.tick();
        slurm.schedule();
        for (Lend lend : ledger.assembly(job).orElseThrow().lends()) {
            String id = workerId(lend);
            assertEquals(
                    "ok",
                    TrackerProtocol.line(tracker.worker(
                            job,
                            lend.vgpu(),
                            new Endpoint("10.0.0." + lend.node().charAt(1), 40000 + lend.vgpu()),
                            id,
                            key.lendIssuer(Long.toString(job), lend.vgpu())
                                    .issue(
                                            Long.toString(job),
                                            lend.vgpu(),
                                            id,
                                            Optional.of(TrackerTest.WORKER_CERTIFICATE),
                                            Duration.ofMinutes(1)))));
        }
        tracker.tick();
        slurm.schedule();
        assertEquals("RUNNING", slurm.get(job).state());
        assertEquals(List.of(3), slurm.get(job).gpuIndicesOn("n1"));
    }

    @AfterEach
    void stop() {
        ledger.close();
        key.close();
    }

    @Test
    void aFreedGpuOfTheJobsNodeTakesABorrowedVgpuHomeAndTheLendersHolderIsCancelled() {
        Tracker tracker = tracker();
        long lender1 = lend(1).holder().getAsLong();
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty(), "no GPU of n1 is free yet");

        endFillerOfN1();
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty(), "the agent has not reported: nothing moves");
        assertTrue(noCommand(poll(tracker, 1, stats(10_000, 5_000))));

        tracker.tick();
        Migration intent = onlyMigration();
        assertEquals(Migration.Phase.CLAIMING, intent.phase());
        assertEquals(1, intent.vgpu(), "vGPU 1 waited as long as vGPU 2: the lower index comes first");
        long grant = intent.grant().getAsLong();
        assertTrue(
                slurm.actions.contains("submit grant " + grant + " on n1 for " + job + " v1"),
                slurm.actions.toString());
        tracker.tick();
        assertEquals(Migration.Phase.CLAIMING, onlyMigration().phase(), "the grant holder is not running yet");

        slurm.schedule();
        tracker.tick();
        Migration sent = onlyMigration();
        assertEquals(Migration.Phase.SENT, sent.phase());
        assertEquals(0, sent.gpu().getAsInt());

        AgentChannel.PollReply reply = poll(tracker, 2, stats(10_000, 5_000));
        AgentChannel.Migrate command = assertInstanceOf(AgentChannel.Migrate.class, reply);
        assertEquals(new AgentChannel.LocalGpu(0), command.target());
        assertEquals(1, command.vgpu());
        assertTrue(AgentChannel.verify(token(2), NONCE, command), "signed with the polling vGPU's token");
        assertFalse(AgentChannel.verify(token(1), NONCE, command), "another token does not verify it");
        assertTrue(noCommand(poll(tracker, 1, stats(10_000, 5_000))), "a command is handed out once");

        assertEquals(
                new AgentChannel.Accepted(),
                tracker.agentDone(
                        new AgentChannel.Done(credential(1), command.id(), new AgentChannel.Succeeded(120, 4096))));

        Lend home = lend(1);
        assertTrue(home.home());
        assertEquals("n1", home.node());
        assertEquals(grant, home.holder().getAsLong());
        assertEquals(0, home.gpu().getAsInt());
        assertEquals(Optional.of(workerIdOf(lender1, "n2")), home.workerId());
        assertTrue(slurm.actions.contains("cancel " + lender1), slurm.actions.toString());
        assertEquals(
                Optional.of(MigrationOutcome.Result.OK),
                ledger.lastOutcome(job, 1).map(MigrationOutcome::result));
        MoveRecord move = tracker.migration(command.id()).orElseThrow();
        assertEquals("ok", move.state());
        assertEquals("n2:3", move.from());
        assertEquals("n1:0", move.to());
        assertEquals(120, move.blockedMs());
        assertEquals(4096, move.bytes());

        StatusReport report = tracker.status();
        StatusReport.Migration reported = report.migrations().getFirst();
        assertEquals(command.id(), reported.id());
        assertEquals("n2:3", reported.from());
        assertEquals("n1:0", reported.to());
        assertEquals("ok", reported.outcome());
        assertEquals(java.util.OptionalLong.of(120), reported.blockedMillis());
        assertTrue(reported.reason().startsWith("hook: vGPU 1 moves home to GPU 0: saves "), reported.reason());
        assertEquals(
                Map.of(2, new StatusReport.Forwarded(10, 100)),
                report.assemblies().getFirst().forwarded(),
                "vGPU 1 runs home: only vGPU 2 forwards");

        tracker.tick();
        List<String> status = TrackerProtocol.lines(tracker.status());
        assertTrue(status.stream().noneMatch(line -> line.startsWith("lost ")), status.toString());
        assertTrue(
                status.stream().anyMatch(line -> line.contains(" lend=1/n1/" + grant + "/0/home/n2-holder-")),
                status.toString());
        assertTrue(slurm.actions.stream()
                        .filter(action -> action.equals("cancel " + lender1))
                        .count()
                == 1);

        // The job's token for the vGPU that came home still authenticates its agent; vGPU 2 moves next.
        Migration second = onlyMigration();
        assertEquals(2, second.vgpu());
        slurm.schedule();
        tracker.tick();
        AgentChannel.Migrate next =
                assertInstanceOf(AgentChannel.Migrate.class, poll(tracker, 1, stats(10_000, 5_000)));
        assertEquals(new AgentChannel.LocalGpu(1), next.target());
        tracker.agentDone(new AgentChannel.Done(credential(2), next.id(), new AgentChannel.Succeeded(80, 2048)));
        assertTrue(lend(2).home());
        String reply2 = TrackerProtocol.line(tracker.assembly(job, "n1"));
        assertEquals("ok vgpus=3 local=3,0,1", reply2, "a new step gets every vGPU local");

        // The job ends: its holders, grants included, are cancelled.
        tracker.done(job, "n1", 0);
        tracker.tick();
        assertTrue(slurm.activeHolders().isEmpty(), slurm.actions.toString());
    }

    /**
     * n1's filler ends and the agent hints that the job ends in 4 min: within migration_end_guard, nothing moves,
     * although without a time limit a day would count and the vGPU would move (as in the test above).
     */
    private Tracker hintedEndWithinTheEndGuard() {
        Tracker tracker = tracker();
        endFillerOfN1();
        tracker.tick();
        assertTrue(noCommand(poll(tracker, 1, Optional.of(now.plus(Duration.ofMinutes(4))), stats(10_000, 5_000))));
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty(), "4 min to the hinted end is within migration_end_guard");
        return tracker;
    }

    @Test
    void theUsersHintedEndInTheAgentsPollBoundsTheMoveAndItsReasonSaysSo() {
        Tracker tracker = hintedEndWithinTheEndGuard();
        assertTrue(noCommand(poll(tracker, 1, Optional.of(now.plus(Duration.ofHours(2))), stats(10_000, 5_000))));
        tracker.tick();
        MoveRecord move = tracker.migration(onlyMigration().id()).orElseThrow();
        assertEquals(
                "vGPU 1 moves home to GPU 0: saves 720.0 s (100.0 ms remote wait per s over 7200 s left: hinted end in 2"
                        + " h), costs 1.0 s (5000 live bytes)",
                move.reason());
    }

    @Test
    void aPollWithoutAHintDropsTheOneBefore() {
        Tracker tracker = hintedEndWithinTheEndGuard();
        // the next step's program gives no hint: the job's time limit (none here) counts again
        assertTrue(noCommand(poll(tracker, 1, stats(10_000, 5_000))));
        tracker.tick();
        assertTrue(
                tracker.migration(onlyMigration().id()).orElseThrow().reason().contains("over 86400 s left)"));
    }

    @Test
    void aFailedMoveLeavesTheVgpuRemoteCancelsTheGrantAndBacksOffForTheCooldown() {
        Tracker tracker = tracker();
        long lender1 = lend(1).holder().getAsLong();
        Migration sent = sentHome(tracker);
        AgentChannel.Migrate command = takenCommand(tracker);

        assertEquals(
                new AgentChannel.Accepted(),
                tracker.agentDone(new AgentChannel.Done(
                        credential(1), command.id(), AgentChannel.Failed.because("window taken on GPU 0"))));

        assertFalse(lend(1).home());
        assertEquals(lender1, lend(1).holder().getAsLong());
        assertTrue(slurm.actions.contains("cancel " + sent.grant().getAsLong()), slurm.actions.toString());
        assertFalse(slurm.actions.contains("cancel " + lender1));
        assertEquals("failed", tracker.migration(command.id()).orElseThrow().state());
        assertTrue(tracker.migration(command.id()).orElseThrow().explanation().contains("window taken on GPU 0"));

        // vGPU 2 may move (its own cooldown is clear); vGPU 1 not before 5 minutes.
        tracker.tick();
        assertEquals(2, onlyMigration().vgpu());
        assertEquals(
                "error migration " + onlyMigration().id() + " was not sent to job " + job + "'s agent yet",
                tracker.agentDone(new AgentChannel.Done(
                                credential(2), onlyMigration().id(), AgentChannel.Failed.because("x")))
                        .format());
        slurm.schedule();
        tracker.tick();
        long second = onlyMigration().id();
        tracker.agentDone(new AgentChannel.Done(credential(2), second, AgentChannel.Failed.because("x")));
        now = now.plus(Duration.ofMinutes(4));
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty(), "both vGPUs are cooling down");
        now = now.plus(Duration.ofMinutes(2));
        poll(tracker, 1, stats(10_000, 0));
        tracker.tick();
        assertEquals(1, onlyMigration().vgpu(), "after the cooldown vGPU 1 is tried again");
    }

    @Test
    void aGrantHolderThatSlurmDoesNotStartIsCancelledAndTheMoveTriedAgainLater() {
        Tracker tracker = tracker();
        endFillerOfN1();
        // Only vGPU 1 has reported, so only it can move.
        poll(tracker, 1, stats(10_000, 0).subList(0, 1));
        tracker.tick();
        long grant = onlyMigration().grant().getAsLong();
        // Slurm gives every free GPU of n1 to another job first.
        long other = slurm.runOn("n1", List.of(0, 1, 2), 1);

        now = now.plusSeconds(31);
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty());
        assertTrue(slurm.actions.contains("cancel " + grant), slurm.actions.toString());
        assertEquals(
                Optional.of(MigrationOutcome.Result.GAVE_UP),
                ledger.lastOutcome(job, 1).map(MigrationOutcome::result));
        assertFalse(lend(1).home());

        slurm.setState(other, "COMPLETED");
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty(), "gave-up backs off for the grant timeout");
        now = now.plusSeconds(31);
        tracker.tick();
        assertEquals(1, onlyMigration().vgpu());
    }

    @Test
    void anAdminMoveAskedBetweenATicksLookAndItsTurnWaitsForALookThatCanShowTheGrant() {
        Tracker tracker = tracker();
        endFillerOfN1();
        // The tick's look is taken before the admin's grant holder exists, so that look cannot list it.
        slurm.afterNextLook(() ->
                assertTrue(tracker.migrate(job, 1, Optional.empty(), "root").ok()));
        tracker.tick();
        assertEquals(Migration.Phase.CLAIMING, onlyMigration().phase(), "a grant no look has shown is not gone");

        slurm.schedule();
        tracker.tick();
        assertEquals(Migration.Phase.SENT, onlyMigration().phase());
    }

    @Test
    void aGrantHolderThatNoLookListsWithinTheGrantTimeoutIsGivenUp() {
        Tracker tracker = tracker();
        endFillerOfN1();
        assertTrue(tracker.migrate(job, 1, Optional.empty(), "root").ok());
        long grant = onlyMigration().grant().getAsLong();
        slurm.forget(grant);
        tracker.tick();
        assertEquals(Migration.Phase.CLAIMING, onlyMigration().phase());

        now = now.plusSeconds(31);
        tracker.tick();
        assertTrue(ledger.migrations().isEmpty());
        assertEquals(
                Optional.of(MigrationOutcome.Result.GAVE_UP),
                ledger.lastOutcome(job, 1).map(MigrationOutcome::result));
    }

    @Test
    void aTrackerKilledAfterSendingFindsTheMigrationAndTakesTheAgentsDone() {
        Tracker first = tracker();
        long grant = sentHome(first).grant().getAsLong();
        AgentChannel.Migrate command = takenCommand(first);

        Tracker restarted = restartedAfterKill();
        Migration found = onlyMigration();
        assertEquals(Migration.Phase.SENT, found.phase());
        assertFalse(slurm.actions.contains("cancel " + grant), "the grant holder is known, not cancelled");

        // The agent tells a move's outcome before it polls again: its done reaches the restarted tracker first.
        restarted.agentDone(new AgentChannel.Done(credential(1), command.id(), new AgentChannel.Succeeded(5, 6)));
        assertTrue(lend(1).home());
        assertTrue(ledger.nextMigrationId() > command.id());
    }

    @Test
    void aCommandLostWithAKilledTrackerIsNotSentAgainAndTheAgentsFirstReportSinceSettlesIt() {
        Tracker first = tracker();
        long lender1 = lend(1).holder().getAsLong();
        long grant = sentHome(first).grant().getAsLong(); // queued; the tracker dies before any poll takes it

        Tracker restarted = restartedAfterKill();
        assertEquals(Migration.Phase.SENT, onlyMigration().phase(), "before the agent reports, nothing is decided");

        now = now.plusSeconds(2);
        assertTrue(noCommand(poll(restarted, 1, stats(10_000, 0))), "a sent command is never sent again");
        restarted.tick();
        assertTrue(
                ledger.migrations().stream().noneMatch(m -> m.vgpu() == 1),
                "the report settles the move long before the migration timeout: " + ledger.migrations());
        assertStayedWithItsLender(grant, lender1);
    }

    @Test
    void aMoveWhoseDoneNeverCameAfterARestartIsSettledHomeByTheAgentsFirstReport() {
        Tracker first = tracker();
        long lender1 = lend(1).holder().getAsLong();
        sentHome(first);
        takenCommand(first);

        Tracker restarted = restartedAfterKill();
        now = now.plusSeconds(2);
        poll(restarted, 2, vgpu1OnGrantedGpu());
        restarted.tick();
        assertTrue(lend(1).home(), "the agent's report shows it moved");
        assertTrue(slurm.actions.contains("cancel " + lender1), "the former lender's holder is released");
    }

    @Test
    void withoutADoneTheVgpusPlaceSinceTheCommandDecidesAndSilenceKeepsBothGpus() {
        Tracker tracker = tracker();
        long lender1 = lend(1).holder().getAsLong();
        long grant = sentHome(tracker).grant().getAsLong();
        AgentChannel.Migrate command = takenCommand(tracker);

        now = now.plus(Duration.ofMinutes(11));
        tracker.tick();
        assertEquals(command.id(), onlyMigration().id(), "the agent is silent: nothing is decided");
        assertFalse(slurm.actions.contains("cancel " + grant));
        assertFalse(slurm.actions.contains("cancel " + lender1));

        poll(tracker, 2, vgpu1OnGrantedGpu());
        tracker.tick();
        assertTrue(lend(1).home(), "the agent's own report shows it moved");
        assertTrue(slurm.actions.contains("cancel " + lender1));
    }

    @Test
    void aCommandNoAgentTookWithinTheTimeoutFailsReleasingTheGrantAndKeepingTheLender() {
        Tracker tracker = tracker();
        long lender1 = lend(1).holder().getAsLong();
        long grant = sentHome(tracker).grant().getAsLong();

        now = now.plus(Duration.ofMinutes(9));
        tracker.tick();
        assertFalse(slurm.actions.contains("cancel " + grant), "within the timeout the command waits");
        now = now.plus(Duration.ofMinutes(2));
        tracker.tick();
        assertTrue(ledger.migrations().stream().noneMatch(m -> m.vgpu() == 1), "vGPU 1's move has ended");
        assertStayedWithItsLender(grant, lender1);
    }

    @Test
    void anAgentsByeWithdrawsTheCommandItNeverTookAndStopsMovesUntilAnAgentPollsAgain() {
        Tracker tracker = tracker();
        long lender1 = lend(1).holder().getAsLong();
        long grant = sentHome(tracker).grant().getAsLong();
        assertInstanceOf(
                AgentChannel.Refused.class,
                tracker.agentBye(
                        new AgentChannel.Bye(new AgentChannel.Credential(Long.toString(job), 1, "v1.forged.mac"))));
        assertEquals(Migration.Phase.SENT, onlyMigration().phase(), "a forged bye changes nothing");

        assertEquals(new AgentChannel.Accepted(), tracker.agentBye(new AgentChannel.Bye(credential(1))));
        assertTrue(ledger.migrations().isEmpty(), "the command no agent took is withdrawn at once");
        assertEquals(
                MigrationOutcome.Result.FAILED,
                ledger.lastOutcome(job, 1).orElseThrow().result());
        assertTrue(slurm.actions.contains("cancel " + grant), "the grant holder is released");
        assertFalse(slurm.actions.contains("cancel " + lender1), "the vGPU never left its lender");
        MigrationHook.Reply refused = tracker.migrate(job, 2, Optional.empty(), "root");
        assertFalse(refused.ok());
        assertTrue(refused.text().contains("its app ended"), refused.text());

        assertInstanceOf(AgentChannel.Idle.class, poll(tracker, 2, stats(10_000, 0)));
        MigrationHook.Reply started = tracker.migrate(job, 2, Optional.empty(), "root");
        assertTrue(started.ok(), "the next step's agent polls: moves start again: " + started.text());
    }

    @Test
    void forgedOrForeignCredentialsAndUnknownJobsGetOneErrorAndChangeNothing() throws Exception {
        Tracker tracker = tracker();
        endFillerOfN1();
        TrackerDaemon daemon = TrackerDaemon.start(
                tracker, ledger, new Endpoint("127.0.0.1", 0), Duration.ofHours(1), Optional.empty(), Set.of());
        try {
            Endpoint socket = daemon.endpoint();
            String forged = token(1).substring(0, token(1).length() - 4) + "AAAA";
            String otherWorker = key.lendIssuer(Long.toString(job), 1)
                    .issue(Long.toString(job), 1, "n9-holder-1", Duration.ofMinutes(1));
            // signed with this lend's key, which its borrower can read, naming another job
            String otherJob =
                    key.lendIssuer(Long.toString(job), 1).issue("7", 1, workerId(lend(1)), Duration.ofMinutes(1));
            String otherLend =
                    key.lendIssuer("7", 1).issue(Long.toString(job), 1, workerId(lend(1)), Duration.ofMinutes(1));
            String expired = new TokenIssuer(
                            SiteKey.load(key.keyFile()).forLend(Long.toString(job), 1),
                            Clock.fixed(START.minus(Duration.ofDays(2)), ZoneOffset.UTC))
                    .issue(Long.toString(job), 1, workerId(lend(1)), Duration.ofHours(1));
            List<String[]> requests = List.of(
                    new String[] {"agent poll " + job + " 1 " + forged + " " + NONCE, "error unauthenticated: "},
                    new String[] {"agent poll " + job + " 1 " + otherWorker + " " + NONCE, "error unauthenticated: "},
                    new String[] {
                        "agent poll " + job + " 1 " + otherJob + " " + NONCE,
                        "error unauthenticated: the token is job 7's, not job " + job + "'s"
                    },
                    new String[] {
                        "agent poll " + job + " 1 " + otherLend + " " + NONCE,
                        "error unauthenticated: session token signature does not match"
                    },
                    new String[] {
                        "agent poll " + job + " 2 " + token(1) + " " + NONCE,
                        // vGPU 1's token is signed with vGPU 1's lend key
                        "error unauthenticated: session token signature does not match"
                    },
                    new String[] {
                        "agent poll 99 1 " + token(1) + " " + NONCE,
                        "error job 99 has no running vGPU assembly at this tracker"
                    },
                    new String[] {
                        "agent poll " + job + " 0 " + token(1) + " " + NONCE,
                        "error job " + job + " has no borrowed vGPU 0"
                    },
                    new String[] {"agent poll " + job + " 1 " + token(1) + " xyz", "error "},
                    new String[] {"agent poll", "error "},
                    new String[] {"agent fly", "error unknown agent request 'fly'"},
                    new String[] {
                        "agent done " + job + " 1 " + otherJob + " 1 ok 1 2",
                        "error unauthenticated: the token is job 7's"
                    },
                    new String[] {
                        "agent done " + job + " 1 " + token(1) + " 42 ok 1 2",
                        "error job " + job + " has no migration 42 under way"
                    },
                    new String[] {"migrate 99 1", "error job 99 has no running vGPU assembly at this tracker"},
                    new String[] {"migrate " + job + " 0", "error vGPU 0 of job " + job + " is not borrowed"},
                    new String[] {
                        "migrate " + job + " 1 n2", "error vGPU 1 of job " + job + " is served from n2 already"
                    },
                    new String[] {"migrate " + job + " 1 n3", "error node n3 cannot lend a GPU now"},
                    new String[] {"migrate " + job, "error usage: migrate <job> <vgpu> [<node>]"},
                    new String[] {"hook sleep", "error usage: hook pause|resume"},
                    new String[] {"migration 12345", "error the tracker knows no migration 12345"});
            for (String[] request : requests) {
                List<String> reply = LineClient.request(socket, request[0], Duration.ofSeconds(5));
                assertEquals(1, reply.size(), request[0] + " -> " + reply);
                assertTrue(reply.getFirst().startsWith(request[1]), "'" + request[0] + "' got '" + reply + "'");
            }
            assertTrue(
                    LineClient.request(
                                    socket, "agent poll " + job + " 1 " + expired + " " + NONCE, Duration.ofSeconds(30))
                            .getFirst()
                            .equals("ok idle"),
                    "a token past its expiry still identifies a running job's agent");
            assertTrue(ledger.migrations().isEmpty(), "nothing started");
            assertFalse(lend(1).home());

            assertEquals(List.of("ok hook paused"), LineClient.request(socket, "hook pause", Duration.ofSeconds(5)));
            poll(tracker, 1, stats(10_000, 0));
            tracker.tick();
            assertTrue(ledger.migrations().isEmpty(), "a paused hook starts nothing");
            assertEquals(List.of("ok hook running"), LineClient.request(socket, "hook resume", Duration.ofSeconds(5)));
            List<String> started = LineClient.request(socket, "migrate " + job + " 2", Duration.ofSeconds(5));
            assertTrue(
                    started.getFirst().matches("ok migration \\d+ started: vGPU 2 of job " + job + " moves home to n1"),
                    started.toString());
            assertEquals(
                    "error job " + job + " has migration " + onlyMigration().id() + " (vGPU 2) under way; one at a"
                            + " time",
                    LineClient.request(socket, "migrate " + job + " 1", Duration.ofSeconds(5))
                            .getFirst());
            List<String> progress =
                    LineClient.request(socket, "migration " + onlyMigration().id(), Duration.ofSeconds(5));
            assertTrue(
                    progress.getFirst()
                            .startsWith("ok migration id=" + onlyMigration().id() + " job=" + job
                                    + " vgpu=2 from=n3:3 to=n1:? by=admin state=claiming"),
                    progress.toString());
        } finally {
            daemon.close();
            ledger = Ledger.open(dir.resolve("tracker.ledger"));
        }
    }

    @Test
    void aDrainMovesEveryVgpuServedFromTheNodeHome() {
        Tracker tracker = tracker();
        assertEquals(
                new MigrationHook.Reply(
                        false,
                        "nothing moves off n2: 0 moving, 1 staying: job " + job + " vGPU 1: node n1 has no free GPU"
                                + " for vGPU 1 of job " + job + " now"),
                tracker.drain("n2", "root"));
        endFillerOfN1();
        MigrationHook.Reply reply = tracker.drain("n2", "root");
        assertTrue(reply.ok(), reply.text());
        assertEquals(1, onlyMigration().vgpu());
        assertEquals("admin", onlyMigration().by());
        assertEquals(new MigrationHook.Reply(true, "node n1 serves no borrowed vGPU"), tracker.drain("n1", "root"));
    }

    /**
     * The golden admin transcripts, which the admin client's tests read too: the real protocol answers each admin
     * request word for word, on this test's job (scenario assembled), then once n1's other GPUs are free (n1-free).
     */
    @Test
    void theTrackerAnswersTheGoldenAdminTranscriptsWordForWord() {
        TrackerProtocol protocol =
                new TrackerProtocol(tracker(), () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.empty(), Set.of());
        Transcripts transcripts = Transcripts.read(Transcripts.ADMIN_FILE);
        assertEquals(
                List.of("assembled", "n1-free"),
                List.copyOf(transcripts.scenarios().keySet()));
        assertEquals(103, job, "the job id the transcripts name");
        transcripts.assertAnswered(protocol, "assembled");
        endFillerOfN1();
        transcripts.assertAnswered(protocol, "n1-free");
    }

    @Test
    void aDrainWithoutAFreeGpuAtHomeMovesTheVgpuToTheNextLenderWithAFreshToken() {
        Tracker tracker = tracker();
        long oldHolder = lend(1).holder().getAsLong();
        String oldWorker = lend(1).workerId().orElseThrow();
        slurm.setState(fillers.get(2), "COMPLETED"); // n3 has free GPUs, n1 none

        MigrationHook.Reply reply = tracker.drain("n2", "root");
        assertTrue(reply.text().contains("moves from n2 to n3"), reply.text());
        Migration claiming = onlyMigration();
        assertTrue(claiming.remote());
        long holder = claiming.grant().getAsLong();
        assertTrue(
                slurm.actions.stream()
                        .anyMatch(action -> action.startsWith("submit holder " + holder + " on n3 for " + job + " v1: ")
                                && action.contains("'--lend' '" + job + ":1'")),
                slurm.actions.toString());
        slurm.schedule();
        tracker.tick();
        assertEquals(Migration.Phase.CLAIMING, onlyMigration().phase(), "its worker has not announced itself");

        String newWorker = "n3-holder-" + holder;
        Endpoint endpoint = new Endpoint("10.0.0.3", 41001);
        announceWorker(tracker, 1, endpoint, newWorker);
        tracker.tick();
        assertEquals(Migration.Phase.SENT, onlyMigration().phase());
        AgentChannel.Migrate command = assertInstanceOf(AgentChannel.Migrate.class, poll(tracker, 1, stats(10, 0)));
        AgentChannel.RemoteTarget target = assertInstanceOf(AgentChannel.RemoteTarget.class, command.target());
        assertEquals(endpoint, target.endpoint());
        assertEquals(
                Long.toString(job),
                new TokenVerifier(SiteKey.load(key.keyFile()).forLend(Long.toString(job), 1), newWorker, clock)
                        .verify(target.sessionToken(), 1)
                        .jobId(),
                "the target carries a token for the new worker");
        assertTrue(AgentChannel.verify(token(1), NONCE, command));

        tracker.agentDone(new AgentChannel.Done(credential(1), command.id(), new AgentChannel.Succeeded(30, 8)));
        Lend moved = lend(1);
        assertEquals("n3", moved.node());
        assertEquals(holder, moved.holder().getAsLong());
        assertEquals(Optional.of(endpoint), moved.worker());
        assertEquals(List.of(oldWorker, newWorker), moved.workerIds());
        assertTrue(slurm.actions.contains("cancel " + oldHolder), slurm.actions.toString());
        assertTrue(noCommand(poll(tracker, 1, stats(10, 0))), "the job's first token still authenticates its agent");
        tracker.tick();
        assertTrue(
                TrackerProtocol.lines(tracker.status()).stream()
                        .anyMatch(line -> line.contains(
                                " lend=1/n3/" + holder + "/0/10.0.0.3:41001/" + newWorker + "/" + oldWorker + " ")),
                TrackerProtocol.lines(tracker.status()).toString());
        assertTrue(TrackerProtocol.lines(tracker.status()).stream().noneMatch(line -> line.startsWith("lost ")));
    }

    @Test
    void withMungeOnlyRootAndTrustedUsersMayAskForMoves() throws IOException {
        // A stand-in for unmunge: the "credential" is base64 of what unmunge would print (its UID line, the payload).
        Path unmunge = dir.resolve("unmunge");
        Files.writeString(unmunge, "#!/bin/sh\nbase64 -d\n");
        unmunge.toFile().setExecutable(true);
        TrackerProtocol protocol = new TrackerProtocol(
                tracker(), () -> {}, 4096, Optional.of(new MungeVerifier(unmunge, Optional.empty())), Set.of("slurm"));
        BiFunction<String, String, String> ask = (request, sender) -> protocol.answer(
                        new BoundedLineReader.Line(
                                request + (sender == null ? "" : " munge=" + credential(sender, request)), false),
                        "127.0.0.1")
                .getFirst();

        assertEquals(
                "error unauthenticated: a MUNGE credential is required (munge=... at the end; vgpu's admin commands"
                        + " take --auth munge)",
                ask.apply("hook pause", null));
        assertEquals(
                "error unauthenticated: user alice (uid 1000) may not move vGPUs: only root and trusted users may",
                ask.apply("hook pause", "alice (1000)"));
        assertEquals(
                "error unauthenticated: MUNGE refused the credential: the credential was made for another request",
                protocol.answer(
                                new BoundedLineReader.Line(
                                        "hook pause munge=" + credential("root (0)", "hook resume"), false),
                                "127.0.0.1")
                        .getFirst());
        assertEquals("ok hook paused", ask.apply("hook pause", "root (0)"));
        assertEquals("ok hook running", ask.apply("hook resume", "slurm (64030)"));
        assertEquals(
                "error unauthenticated: user alice (uid 1000) may not move vGPUs: only root and trusted users may",
                ask.apply("migrate " + job + " 1", "alice (1000)"));
        assertTrue(ledger.migrations().isEmpty());
        assertTrue(
                ask.apply("migration 1", null).startsWith("error the tracker knows no migration 1"),
                "a migration's progress needs no credential");
    }

    private static String credential(String sender, String payload) {
        return Base64.getEncoder()
                .encodeToString(("UID: " + sender + "\n\n" + payload + "\n").getBytes(StandardCharsets.US_ASCII));
    }

    // ------------------------------------------------------------------ a holder cancelled under its worker

    @Test
    void aLeavingWorkersVgpuIsEvacuatedHomeAtOnceEvenWithTheHookPaused() {
        Tracker tracker = tracker();
        tracker.pauseHook(true, "root");
        long lender1 = lend(1).holder().getAsLong();
        endFillerOfN1();
        Answer answer = leaving(tracker, 1);
        assertEquals(
                "ok migration " + onlyMigration().id() + " started: vGPU 1 of job " + job + " moves home to n1",
                TrackerProtocol.line(answer));
        assertEquals("admin", onlyMigration().by());
        assertEquals(Migration.Phase.CLAIMING, onlyMigration().phase());

        slurm.setState(lender1, "CANCELLED"); // scancel: Slurm shows it ended while its worker still serves
        slurm.schedule();
        tracker.tick();
        assertTrue(
                TrackerProtocol.lines(tracker.status()).stream().noneMatch(line -> line.startsWith("lost ")),
                "a holder whose vGPU is being evacuated is not lost: " + TrackerProtocol.lines(tracker.status()));
        AgentChannel.Migrate command = takenCommand(tracker);
        tracker.agentDone(new AgentChannel.Done(credential(1), command.id(), new AgentChannel.Succeeded(12, 1024)));
        assertTrue(lend(1).home(), "the vGPU runs on a GPU of its own node");
        assertTrue(slurm.actions.contains("cancel " + lender1), slurm.actions.toString());
        assertTrue(slurm.actions.stream().noneMatch(action -> action.contains("LOST")), slurm.actions.toString());
        assertTrue(Report.of(tracker.status()).borrowed().stream().allMatch(row -> row.lostReason() == null));
    }

    @Test
    void aLeavingWorkerWhoseVgpuNothingCanTakeLosesItAndTheJobIsTold() {
        Tracker tracker = tracker();
        long lender1 = lend(1).holder().getAsLong();
        Answer answer = leaving(tracker, 1);
        String why = "its holder " + lender1 + " is being cancelled and it cannot be evacuated: node n1 has no free"
                + " GPU for vGPU 1 of job " + job + " now, and no other node can lend a GPU";
        assertEquals("error node n1 has no free GPU for vGPU 1 of job " + job + " now", TrackerProtocol.line(answer));
        assertTrue(ledger.migrations().isEmpty());
        assertTrue(
                slurm.actions.contains("comment " + job + " " + "vgpu: " + "vGPU 1 LOST: " + why),
                slurm.actions.toString());
        Report.BorrowedRow row = Report.of(tracker.status()).borrowed().stream()
                .filter(borrowed -> borrowed.vgpu() == 1)
                .findFirst()
                .orElseThrow();
        assertEquals(why, row.lostReason());
        assertTrue(ReportTable.write(Report.of(tracker.status())).contains(lender1 + " LOST: " + why));
        assertTrue(Report.of(tracker.status()).borrowed().stream()
                .filter(borrowed -> borrowed.vgpu() == 2)
                .allMatch(borrowed -> borrowed.lostReason() == null));
    }

    /** A worker that says where it listens for vGPU {@code vgpu}, with the site key's proof: the tracker takes it. */
    private void announceWorker(Tracker tracker, int vgpu, Endpoint endpoint, String workerId) {
        assertEquals(
                "ok",
                TrackerProtocol.line(tracker.worker(
                        job,
                        vgpu,
                        endpoint,
                        workerId,
                        key.lendIssuer(Long.toString(job), vgpu)
                                .issue(
                                        Long.toString(job),
                                        vgpu,
                                        workerId,
                                        Optional.of(TrackerTest.WORKER_CERTIFICATE),
                                        Duration.ofMinutes(1)))));
    }

    /** The agent names the worker it could not reach by its address only; the tracker adds the worker's id. */
    @Test
    void aFailedMoveToAnotherLenderNamesItsWorkerByIdAndAddress() {
        Tracker tracker = tracker();
        slurm.setState(fillers.get(2), "COMPLETED"); // n3 has free GPUs, n1 none
        assertTrue(tracker.drain("n2", "root").ok());
        long holder = onlyMigration().grant().getAsLong();
        slurm.schedule();
        tracker.tick();
        announceWorker(tracker, 1, new Endpoint("10.0.0.3", 41001), "n3-holder-" + holder);
        tracker.tick();
        AgentChannel.Migrate command = assertInstanceOf(AgentChannel.Migrate.class, poll(tracker, 1, stats(10, 0)));

        tracker.agentDone(new AgentChannel.Done(
                credential(1),
                command.id(),
                AgentChannel.Failed.because(
                        "VGPU_WORKER_LOST: worker of vGPU 1 at 10.0.0.3:41001 closed the session")));

        assertEquals(
                "the agent could not move it to worker n3-holder-" + holder + " at 10.0.0.3:41001: VGPU_WORKER_LOST:"
                        + " worker of vGPU 1 at 10.0.0.3:41001 closed the session",
                tracker.migration(command.id()).orElseThrow().explanation());
    }

    @Test
    void aLeavingWorkersVgpuGoesToAnotherLenderAndIsToldLostWhenThatMoveFails() {
        Tracker tracker = tracker();
        slurm.setState(fillers.get(2), "COMPLETED"); // n3 can lend again; n1, the job's node, stays full
        Answer answer = leaving(tracker, 1);
        assertEquals(
                "ok migration " + onlyMigration().id() + " started: vGPU 1 of job " + job + " moves from n2 to n3",
                TrackerProtocol.line(answer));
        assertTrue(onlyMigration().remote());

        slurm.schedule();
        now = now.plus(BOUNDS.grantTimeout()).plusSeconds(1);
        tracker.tick(); // the new holder's worker never announced itself
        assertTrue(ledger.migrations().isEmpty());
        assertTrue(
                slurm.actions.stream()
                        .anyMatch(action -> action.startsWith("comment " + job + " ")
                                && action.contains("vGPU 1 LOST: its holder is being cancelled and its evacuation"
                                        + " (migration ")
                                && action.contains("did not start within 30 s")),
                slurm.actions.toString());
    }

    @Test
    void onlyTheWorkerOfTheLendWithItsProofMayLeave() {
        Tracker tracker = tracker();
        endFillerOfN1();
        String other = workerId(lend(2));
        assertEquals(
                "error worker " + other + " does not serve vGPU 1 of job " + job
                        + " (the assembly ended, or the vGPU moved away already)",
                TrackerProtocol.line(tracker.workerLeaving(
                        job,
                        1,
                        other,
                        key.lendIssuer(Long.toString(job), 1)
                                .issue(Long.toString(job), 1, other, Duration.ofMinutes(1)))));
        String mine = workerId(lend(1));
        assertTrue(TrackerProtocol.line(tracker.workerLeaving(
                        job,
                        1,
                        mine,
                        key.lendIssuer(Long.toString(job), 2)
                                .issue(Long.toString(job), 2, mine, Duration.ofMinutes(1))))
                .startsWith("error unauthenticated: "));
        assertTrue(ledger.migrations().isEmpty(), "nothing moved");

        TrackerProtocol protocol = new TrackerProtocol(tracker, () -> {}, 4096, Optional.empty(), Set.of());
        assertEquals(
                "error usage: worker-leaving <job> <vgpu> <worker-id> <proof>",
                protocol.answer(new BoundedLineReader.Line("worker-leaving " + job + " 1", false), "127.0.0.1")
                        .getFirst());
        String proof = key.lendIssuer(Long.toString(job), 1).issue(Long.toString(job), 1, mine, Duration.ofMinutes(1));
        assertTrue(protocol.answer(
                        new BoundedLineReader.Line("worker-leaving " + job + " 1 " + mine + " " + proof, false),
                        "127.0.0.1")
                .getFirst()
                .startsWith("ok migration "));
    }

    private Answer leaving(Tracker tracker, int vgpu) {
        String id = workerId(lend(vgpu));
        return tracker.workerLeaving(
                job,
                vgpu,
                id,
                key.lendIssuer(Long.toString(job), vgpu).issue(Long.toString(job), vgpu, id, Duration.ofMinutes(1)));
    }

    // ------------------------------------------------------------------ helpers

    private Tracker tracker() {
        return new Tracker(
                site,
                slurm,
                ledger,
                SiteKey.load(key.keyFile()),
                Tracker.Settings.defaults().withMigration(BOUNDS, Duration.ofMillis(50)),
                clock);
    }

    /** n1's filler ends, the agent reports, the hook claims a GPU and the command is queued: the sent migration. */
    private Migration sentHome(Tracker tracker) {
        endFillerOfN1();
        poll(tracker, 1, stats(10_000, 0));
        tracker.tick();
        slurm.schedule();
        tracker.tick();
        Migration sent = onlyMigration();
        assertEquals(Migration.Phase.SENT, sent.phase());
        return sent;
    }

    /** The tracker SIGKILLed (nothing more is written) and started again on its ledger, after its first tick. */
    private Tracker restartedAfterKill() {
        ledger.close();
        ledger = Ledger.open(dir.resolve("tracker.ledger"));
        Tracker restarted = tracker();
        restarted.tick();
        return restarted;
    }

    /** vGPU 1's move home failed: its grant holder is released, and it stays with its lender, whose holder runs on. */
    private void assertStayedWithItsLender(long grant, long lender1) {
        assertEquals(
                MigrationOutcome.Result.FAILED,
                ledger.lastOutcome(job, 1).orElseThrow().result());
        assertTrue(slurm.actions.contains("cancel " + grant), "the grant holder is released");
        assertFalse(slurm.actions.contains("cancel " + lender1), "the vGPU never left its lender");
        assertFalse(lend(1).home());
    }

    /** What the agent reports once vGPU 1 moved onto GPU 0 of the job's node, the one granted; vGPU 2 still remote. */
    private static List<AgentChannel.Stat> vgpu1OnGrantedGpu() {
        return List.of(
                new AgentChannel.Stat(1, new AgentChannel.LocalGpu(0), 0, 0, 0, 0),
                new AgentChannel.Stat(2, new AgentChannel.RemoteWorker(new Endpoint("10.0.0.3", 40002)), 1, 1, 1, 1));
    }

    /** The agent's next poll, which takes the queued command. */
    private AgentChannel.Migrate takenCommand(Tracker tracker) {
        return assertInstanceOf(AgentChannel.Migrate.class, poll(tracker, 1, stats(10_000, 0)));
    }

    private void endFillerOfN1() {
        slurm.setState(fillers.getFirst(), "COMPLETED");
    }

    private Migration onlyMigration() {
        assertEquals(1, ledger.migrations().size(), ledger.migrations().toString());
        return ledger.migrations().iterator().next();
    }

    private Lend lend(int vgpu) {
        Assembly assembly = ledger.assembly(job).orElseThrow();
        return assembly.lends().get(vgpu - assembly.localGpus());
    }

    private static String workerId(Lend lend) {
        return workerIdOf(lend.holder().getAsLong(), lend.node());
    }

    private static String workerIdOf(long holder, String node) {
        return node + "-holder-" + holder;
    }

    /** The job's session token for a vGPU, as its environment holds it: one per vGPU for the whole job. */
    private String token(int vgpu) {
        return tokens.computeIfAbsent(
                vgpu,
                ignored -> key.lendIssuer(Long.toString(job), vgpu)
                        .issue(Long.toString(job), vgpu, lend(vgpu).workerId().orElseThrow(), Duration.ofHours(1)));
    }

    private AgentChannel.Credential credential(int vgpu) {
        return new AgentChannel.Credential(Long.toString(job), vgpu, token(vgpu));
    }

    /** Both borrowed vGPUs remote, having waited {@code waitMs} each, with {@code liveBytes} each. */
    private static List<AgentChannel.Stat> stats(long waitMs, long liveBytes) {
        return List.of(
                new AgentChannel.Stat(
                        1, new AgentChannel.RemoteWorker(new Endpoint("10.0.0.2", 40001)), 10, 100, waitMs, liveBytes),
                new AgentChannel.Stat(
                        2, new AgentChannel.RemoteWorker(new Endpoint("10.0.0.3", 40002)), 10, 100, waitMs, liveBytes));
    }

    private AgentChannel.PollReply poll(Tracker tracker, int vgpu, List<AgentChannel.Stat> stats) {
        return poll(tracker, vgpu, Optional.empty(), stats);
    }

    private AgentChannel.PollReply poll(
            Tracker tracker, int vgpu, Optional<Instant> hintedEnd, List<AgentChannel.Stat> stats) {
        return tracker.agentPoll(new AgentChannel.Poll(credential(vgpu), NONCE, hintedEnd, stats));
    }

    private static boolean noCommand(AgentChannel.PollReply reply) {
        return reply instanceof AgentChannel.Idle;
    }
}
