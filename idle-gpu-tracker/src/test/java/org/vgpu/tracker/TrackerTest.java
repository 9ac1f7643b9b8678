package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.BoundedLineReader;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SessionToken;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.siteconfig.SiteConfig;
import org.vgpu.tracker.ledger.Assembly;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportJson;
import org.vgpu.tracker.server.TrackerDaemon;
import org.vgpu.tracker.server.TrackerProtocol;
import org.vgpu.tracker.slurm.SlurmException;

/**
 * The tracker's decisions against {@link InMemorySlurm} and a lender answering on a real socket:
 * assembling, ending, giving up, and restarting from the ledger.
 */
class TrackerTest {
    /** What the holders' workers prove as their TLS certificate (worker_tls is on by default). */
    static final CertificatePin WORKER_CERTIFICATE = CertificatePin.ofDigest(
            new byte[] {7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7
            });

    private static final Instant START = Instant.parse("2026-11-21T12:00:00Z");

    @TempDir
    Path dir;

    private ThrowawaySiteKey key;
    private final InMemorySlurm slurm = new InMemorySlurm();
    private final MutableClock clock = new MutableClock(START);
    private SiteConfig site;
    private Ledger ledger;

    @BeforeEach
    void cluster() throws IOException {
        key = ThrowawaySiteKey.create("tracker-test");
        site = TestCluster.configure(
                dir, key, slurm, "", "[slurm]\njob_partition = gpu\n[distance]\nn1 n2 = 1\nn2 n3 = 1\nn1 n3 = 2\n");
        ledger = Ledger.open(dir.resolve("tracker.ledger"));
    }

    @AfterEach
    void stop() {
        if (ledger != null) {
            ledger.close();
        }
        key.close();
    }

    @Test
    void aHeldJobOnOneIdleGpuPerNodeIsAssembledFromOneLocalAndTwoBorrowedGpus() throws Exception {
        fillLeavingOneIdleGpuPerNode();
        long job = slurm.submitVgpuJob(3);
        Tracker tracker = tracker();

        tracker.tick();
        assertTrue(
                statusLines(tracker)
                        .contains(
                                "waiting job=" + job + " user=alice vgpus=3 reason=waiting for 3 GPUs: most idle"
                                        + " node n1 has 1, other nodes can lend 0 (idle for 10s, with a free CPU), a job may borrow at most 4"),
                statusLines(tracker).toString());
        clock.advance(Duration.ofSeconds(11));
        tracker.tick();
        List<Long> holders = slurm.activeHolders();
        assertEquals(2, holders.size(), slurm.actions.toString());
        assertEquals("wait the tracker is still securing the GPUs of job " + job, line(tracker.assembly(job, "n1")));

        assertTrue(
                slurm.actions.stream()
                        // Every value one quoted shell word (HolderScriptTest runs it through sh).
                        .anyMatch(action -> action.matches("submit holder \\d+ on n2 for " + job + " v1: export"
                                + " CUDA_DEVICE_ORDER='PCI_BUS_ID'; VGPU_LEND_KEY='"
                                + Pattern.quote(SiteKey.load(key.keyFile())
                                        .forLend(Long.toString(job), 1)
                                        .base64())
                                + "'; export VGPU_LEND_KEY; exec '/usr/bin/vgpu' 'worker' '--listen' '10\\.0\\.0\\.2:0'"
                                + " '--backend' 'native' '--device' '0' '--worker-id' 'n2-holder-'\"\\$SLURM_JOB_ID\" '--key-env'"
                                + " 'VGPU_LEND_KEY' '--idle-timeout' '3600' '--tracker' '127\\.0\\.0\\.1:7400' '--lend' '"
                                + job
                                + ":1' '--tls-self-signed'")),
                slurm.actions.toString());
        slurm.schedule();
        tracker.tick();
        assertTrue(
                slurm.actions.stream().noneMatch(action -> action.startsWith("release ")),
                "released before its workers run");
        assertTrue(line(tracker.worker(job, 1, new Endpoint("10.0.0.2", 40001), "n2-w", "v1.forged.proof"))
                .startsWith("error unauthenticated: malformed session token"));
        assertEquals(
                "error the proof is for job 7, not " + job,
                line(tracker.worker(
                        job,
                        1,
                        new Endpoint("10.0.0.2", 40001),
                        "n2-w",
                        // signed with this lend's key, which its borrower can read
                        key.lendIssuer(Long.toString(job), 1).issue("7", 1, "n2-w", Duration.ofMinutes(1)))));
        assertTrue(line(tracker.worker(
                        job,
                        1,
                        new Endpoint("10.0.0.2", 40001),
                        "n2-w",
                        // another lend's key proves nothing of this one
                        key.lendIssuer("7", 1).issue(Long.toString(job), 1, "n2-w", Duration.ofMinutes(1))))
                .startsWith("error unauthenticated: session token signature does not match"));
        assertEquals(
                "error job " + job + " has no borrowed vGPU 0 (its assembly ended or never had it)",
                line(tracker.worker(
                        job,
                        0,
                        new Endpoint("10.0.0.1", 40001),
                        "n1-w",
                        key.lendIssuer(Long.toString(job), 0)
                                .issue(Long.toString(job), 0, "n1-w", Duration.ofMinutes(1)))));
        assertEquals(
                "error worker n2-w proves no TLS certificate, and [cluster] worker_tls is on (a worker started without"
                        + " --tls-self-signed: is vgpu on its node older than the tracker's?)",
                line(tracker.worker(
                        job,
                        1,
                        new Endpoint("10.0.0.2", 40001),
                        "n2-w",
                        key.lendIssuer(Long.toString(job), 1)
                                .issue(Long.toString(job), 1, "n2-w", Duration.ofMinutes(1)))));
        announceWorkers(tracker, job);
        tracker.tick();
        assertTrue(slurm.actions.contains("pin " + job + " to n1 gpu:1,vgpu:3"), slurm.actions.toString());

        assertTrue(slurm.actions.contains("release " + job), slurm.actions.toString());
        slurm.schedule();
        assertEquals("RUNNING", slurm.get(job).state());
        Answer.Assembled assembled = (Answer.Assembled) tracker.assembly(job, "n1");
        for (Answer.Borrowed borrowed : assembled.borrowed()) {
            assertEquals(
                    Optional.of(WORKER_CERTIFICATE),
                    SessionToken.pinnedCertificate(borrowed.token()),
                    "the job's token pins the certificate its worker proved");
        }

        assertEquals(
                "error job " + job + " has its vGPU assembly on node n1, not on n2", line(tracker.assembly(job, "n2")));
        String reply = awaitOk(tracker, job);
        assertTrue(
                reply.matches(
                        "ok vgpus=3 local=3 remote=1@10\\.0\\.0\\.2:40000#v3\\.\\S+,2@10\\.0\\.0\\.3:40001#v3\\.\\S+"),
                reply);
        Assembly assembly = ledger.assembly(job).orElseThrow();
        assertEquals(Assembly.Phase.RELEASED, assembly.phase());
        assertEquals(
                List.of("n2", "n3"),
                assembly.lends().stream().map(lend -> lend.node()).toList());
        assertEquals(holders, assembly.holders());
    }

    @Test
    void aJobThatEndsHasItsHoldersCancelledAndIsForgotten() throws Exception {
        long job = assembledJob();
        List<Long> holders = ledger.assembly(job).orElseThrow().holders();
        Tracker tracker = tracker();

        assertEquals("ok", line(tracker.done(job, "n1", 0)));
        tracker.tick();

        assertTrue(ledger.assembly(job).isEmpty());
        assertTrue(slurm.activeHolders().isEmpty(), slurm.actions.toString());
        assertTrue(
                statusLines(tracker).stream()
                        .anyMatch(line -> line.startsWith(
                                "ended job=" + job + " user=alice node=n1 vgpus=3" + " borrowed=2 why=done")),
                statusLines(tracker).toString());
        assertTrue(slurm.actions.containsAll(
                holders.stream().map(holder -> "cancel " + holder).toList()));
        assertEquals(java.util.Map.of("done", 1L), tracker.status().endedTotals(), "what vgpu_assemblies_total counts");
    }

    @Test
    void aDoneFromANodeTheJobDoesNotRunOnIsRefusedAndEndsNothing() throws Exception {
        long job = assembledJob();
        List<Long> holders = ledger.assembly(job).orElseThrow().holders();
        Tracker tracker = tracker();
        TrackerDaemon daemon = TrackerDaemon.start(
                tracker, ledger, new Endpoint("127.0.0.1", 0), Duration.ofHours(1), Optional.empty(), Set.of());
        try {
            for (String node : List.of("n9", "n2")) {
                assertEquals(
                        List.of("error job " + job + " has its vGPU assembly on node n1, not on " + node
                                + ": a done from there ends nothing"),
                        LineClient.request(
                                daemon.endpoint(), "done " + job + " " + node + " 0", Duration.ofSeconds(5)));
            }
            tracker.tick();
            assertEquals(
                    Assembly.Phase.RELEASED, ledger.assembly(job).orElseThrow().phase());
            assertEquals(holders, slurm.activeHolders(), slurm.actions.toString());
            assertTrue(
                    slurm.actions.stream().noneMatch(action -> action.startsWith("cancel ")), slurm.actions.toString());
        } finally {
            daemon.close();
        }
    }

    @Test
    void aDoneForAJobThatHasNotStartedIsRefused() {
        fillLeavingOneIdleGpuPerNode();
        long job = slurm.submitVgpuJob(3);
        Tracker tracker = trackerThatSawTheIdleGpusForTheGracePeriod();
        tracker.tick();
        assertEquals(Assembly.Phase.SECURING, ledger.assembly(job).orElseThrow().phase());

        assertEquals(
                "error job " + job + " has not started (the tracker is still securing its GPUs): a done ends nothing",
                line(tracker.done(job, "n1", 0)));
        slurm.schedule();
        announceWorkers(tracker, job);
        tracker.tick(); // released, and still pending until Slurm schedules it
        assertEquals(Assembly.Phase.RELEASED, ledger.assembly(job).orElseThrow().phase());
        assertEquals("PENDING", slurm.get(job).state());
        assertEquals(
                "error Slurm has job " + job + " pending, its batch step has not run: a done ends nothing",
                line(tracker.done(job, "n1", 0)));
        tracker.tick();
        assertTrue(ledger.assembly(job).isPresent());
        assertEquals(2, slurm.activeHolders().size(), slurm.actions.toString());
    }

    @Test
    void statusJsonOnTheSocketIsTheReportOfWhatTheLastTickSaw() throws Exception {
        long job = assembledJob();
        long held = slurm.submitVgpuJob(2);
        Tracker tracker = tracker();
        tracker.tick();
        TrackerDaemon daemon = TrackerDaemon.start(
                tracker,
                ledger,
                new Endpoint("127.0.0.1", 0),
                Duration.ofHours(1),
                java.util.Optional.empty(),
                java.util.Set.of());
        try {
            Report report = ReportJson.fromReply(
                    LineClient.request(daemon.endpoint(), "status json", Duration.ofSeconds(5)),
                    daemon.endpoint().toString());

            assertEquals(START.plusSeconds(11), report.generatedAt());
            Report.AssemblyRow assembly = report.assemblies().getFirst();
            assertEquals(job, assembly.job());
            assertEquals(List.of(slurm.get(job).gpuIndicesOn("n1").getFirst()), assembly.localGpus());
            assertEquals(
                    List.of("n2", "n3"),
                    report.borrowed().stream()
                            .map(Report.BorrowedRow::lenderNode)
                            .toList());
            assertTrue(report.borrowed().stream().allMatch(lend -> lend.lenderGpu() != null && lend.holder() != null));
            assertTrue(report.borrowed().stream().allMatch(lend -> lend.forwardedCalls() == null));
            assertEquals(List.of(), report.migrations());
            assertEquals(
                    List.of(held),
                    report.heldJobs().stream().map(Report.HeldRow::job).toList());
            assertEquals(
                    List.of("n1 0", "n2 0", "n3 0"),
                    report.idleGpus().stream()
                            .map(node -> node.node() + " " + node.count())
                            .toList());
        } finally {
            daemon.close();
        }
    }

    @Test
    void holdersThatDoNotStartInTimeAreCancelledAndTheJobIsPlannedAgain() {
        fillLeavingOneIdleGpuPerNode();
        long job = slurm.submitVgpuJob(3);
        Tracker tracker = trackerThatSawTheIdleGpusForTheGracePeriod();
        tracker.tick();
        tracker.tick();
        assertEquals(2, slurm.activeHolders().size());

        clock.advance(Duration.ofSeconds(61));
        tracker.tick();

        assertTrue(
                slurm.actions.stream()
                        .anyMatch(
                                action -> action.startsWith(
                                        "comment " + job
                                                + " vgpu: assembly given up, planning again: holder jobs and their workers did not start within 60 s")),
                slurm.actions.toString());
        assertEquals(0, slurm.get(job).priority(), "the job stays held");
        tracker.tick();
        assertEquals(2, slurm.activeHolders().size(), "planned again with new holders");
        assertEquals(Assembly.Phase.SECURING, ledger.assembly(job).orElseThrow().phase());
    }

    @Test
    void aRestartedTrackerKeepsWhatItLentAndCancelsHoldersItDoesNotKnow() throws Exception {
        long job = assembledJob();
        List<Long> holders = ledger.assembly(job).orElseThrow().holders();
        long stray = slurm.submitHolder("n1", 999, 1, "true");
        ledger.close();

        ledger = Ledger.open(dir.resolve("tracker.ledger"));
        Tracker restarted = tracker();
        restarted.tick();

        assertEquals(holders, ledger.assembly(job).orElseThrow().holders());
        assertEquals(holders, slurm.activeHolders(), "the stray holder is cancelled, the job's are kept");
        assertTrue(slurm.actions.contains("cancel " + stray));
        assertTrue(awaitOk(restarted, job).startsWith("ok vgpus=3 local=3 remote=1@"));
    }

    @Test
    void aJobReleasedJustBeforeACrashIsTakenAsReleased() {
        fillLeavingOneIdleGpuPerNode();
        long job = slurm.submitVgpuJob(3);
        Tracker tracker = trackerThatSawTheIdleGpusForTheGracePeriod();
        tracker.tick();
        slurm.schedule();
        announceWorkers(tracker, job);
        // The tracker pinned and released the job but died before the ledger said so.
        slurm.pin(job, "n1", 1, 3);
        slurm.release(job);

        tracker().tick();

        assertEquals(Assembly.Phase.RELEASED, ledger.assembly(job).orElseThrow().phase());
    }

    @Test
    void garbageOnTheTrackersSocketGetsOneErrorLineEachAndChangesNothing() throws Exception {
        fillLeavingOneIdleGpuPerNode();
        long job = slurm.submitVgpuJob(2);
        TrackerDaemon daemon = TrackerDaemon.start(
                tracker(),
                ledger,
                new Endpoint("127.0.0.1", 0),
                Duration.ofHours(1),
                java.util.Optional.empty(),
                java.util.Set.of());
        try (java.net.Socket socket =
                new java.net.Socket("127.0.0.1", daemon.endpoint().port())) {
            socket.setSoTimeout(5000);
            var out = socket.getOutputStream();
            var in = new java.io.BufferedReader(
                    new java.io.InputStreamReader(socket.getInputStream(), java.nio.charset.StandardCharsets.US_ASCII));
            List<String[]> requests = List.of(
                    new String[] {"", "error empty request"},
                    new String[] {"hello", "error unknown command 'hello'; commands: assembly <job> <node>, done"},
                    new String[] {"assembly", "error usage: assembly <job> <node>"},
                    new String[] {"assembly x n1", "error job must be a Slurm job id 1..4294967295, got 'x'"},
                    new String[] {"assembly 99999999999 n1", "error job must be a Slurm job id"},
                    new String[] {"assembly 1 n1;rm", "error node must be a Slurm node name"},
                    new String[] {"assembly  1 n1", "error usage: assembly <job> <node>"},
                    new String[] {"done 1 n1 abc", "error status must be -1 or an exit status"},
                    new String[] {
                        "assembly " + job + " n1 munge=MUNGE:AwQ:",
                        "error unauthenticated: the request carries a MUNGE credential but this tracker runs with --auth none"
                    },
                    new String[] {
                        "assembly " + job + " n1", "error job " + job + " has no vGPU assembly from the tracker"
                    },
                    new String[] {"status now", "error usage: status"},
                    new String[] {"x".repeat(5000), "error request longer than 4096 bytes"},
                    new String[] {
                        "assembly \u0000\u00ff 1", "error request holds characters that are not printable ASCII"
                    });
            for (String[] request : requests) {
                out.write((request[0] + "\n").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
                out.flush();
                String reply = in.readLine();
                assertTrue(reply.startsWith(request[1]), "'" + request[0] + "' got '" + reply + "'");
            }
            java.util.Random random = new java.util.Random(7);
            for (int i = 0; i < 500; i++) {
                // One write per line: a separate one-byte write of the newline would wait on Nagle and delayed ACKs.
                byte[] garbage = new byte[random.nextInt(200) + 1];
                random.nextBytes(garbage);
                for (int b = 0; b < garbage.length; b++) {
                    garbage[b] = garbage[b] == '\n' ? (byte) 'n' : garbage[b];
                }
                garbage[garbage.length - 1] = '\n';
                out.write(garbage);
                out.flush();
                String reply = in.readLine();
                assertTrue(reply.startsWith("error ") && reply.chars().allMatch(c -> c >= ' ' && c <= '~'), reply);
            }
            out.write("status\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            out.flush();
            String line = in.readLine();
            while (!line.startsWith("ok ")) {
                line = in.readLine();
            }
            assertEquals("ok assemblies=0 waiting=1", line);
        } finally {
            daemon.close();
            ledger = null;
        }
        assertEquals(0, slurm.get(job).priority(), "nothing was released");
    }

    /**
     * The golden transcripts that the SPANK bridge's tests and the fake tracker replay too: the real
     * protocol, on a tracker in each scenario, answers every request word for word.
     */
    @ParameterizedTest
    @ValueSource(strings = {"nothing", "securing", "assembled", "moved-home"})
    void theTrackerAnswersTheGoldenTranscriptsWordForWord(String scenario) throws Exception {
        Tracker tracker = switch (scenario) {
            case "nothing" -> tracker();
            case "securing" -> {
                fillLeavingOneIdleGpuPerNode();
                assertEquals(103, slurm.submitVgpuJob(3), "the job id the transcripts name");
                Tracker securing = trackerThatSawTheIdleGpusForTheGracePeriod();
                securing.tick();
                yield securing;
            }
            case "assembled" -> {
                assertEquals(103, assembledJob(), "the job id the transcripts name");
                yield tracker();
            }
            case "moved-home" -> {
                assertEquals(103, assembledJob(), "the job id the transcripts name");
                Assembly assembly = ledger.assembly(103).orElseThrow();
                Lend last = assembly.lends().getLast();
                assertEquals(2, last.vgpu());
                // As the hook records a move home: vGPU 2 onto GPU 0 of n1 through a grant holder; vGPU 1 stays remote.
                ledger.record(assembly.withLend(last.movedHome("n1", 106, 0)));
                yield tracker();
            }
            default -> throw new IllegalArgumentException(scenario);
        };
        TrackerProtocol protocol =
                new TrackerProtocol(tracker, () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.empty(), Set.of());
        Transcripts.read().assertAnswered(protocol, scenario);
    }

    @Test
    void aFailureWhileAnsweringIsOneErrorLineInProductWordsNeverJavaText() throws Exception {
        long job = assembledJob();
        TrackerProtocol protocol =
                new TrackerProtocol(tracker(), () -> {}, BridgeContract.REQUEST_LINE_BYTES, Optional.empty(), Set.of());
        BoundedLineReader.Line request = new BoundedLineReader.Line("assembly " + job + " n1", false);

        slurm.jobFailure = SlurmException.unreachable(
                "'scontrol show job -d " + job + "' did not finish within 5 s",
                new java.io.IOException("java.io.IOException: Broken pipe"));
        assertEquals(
                List.of("error tracker failed to answer: 'scontrol show job -d " + job + "' did not finish within 5 s"),
                protocol.answer(request, "127.0.0.1"));
        slurm.jobFailure = new IllegalStateException("java.lang.IllegalStateException: a bug");
        assertEquals(
                List.of("error tracker failed to answer: an internal error, logged by the tracker"),
                protocol.answer(request, "127.0.0.1"));
    }

    @Test
    void everyScenarioOfTheTranscriptsIsReplayed() {
        assertEquals(
                List.of("nothing", "securing", "assembled", "moved-home"),
                List.copyOf(Transcripts.read().scenarios().keySet()));
    }

    private long assembledJob() throws Exception {
        fillLeavingOneIdleGpuPerNode();
        long job = slurm.submitVgpuJob(3);
        Tracker tracker = trackerThatSawTheIdleGpusForTheGracePeriod();
        tracker.tick();
        slurm.schedule();
        announceWorkers(tracker, job);
        tracker.tick();
        slurm.schedule();
        awaitOk(tracker, job);
        return job;
    }

    private void fillLeavingOneIdleGpuPerNode() {
        for (String node : List.of("n1", "n2", "n3")) {
            slurm.runOn(node, List.of(0, 1, 2), 3);
        }
    }

    /** A tracker that has looked at the cluster once and then waited out the grace period, so idle GPUs may be lent. */
    private Tracker trackerThatSawTheIdleGpusForTheGracePeriod() {
        Tracker tracker = tracker();
        tracker.tick();
        clock.advance(Duration.ofSeconds(11));
        return tracker;
    }

    private Tracker tracker() {
        return new Tracker(site, slurm, ledger, SiteKey.load(key.keyFile()), Tracker.Settings.defaults(), clock);
    }

    /** What each holder's worker does once it listens: tell the tracker, with a proof signed by the site key. */
    private void announceWorkers(Tracker tracker, long job) {
        for (var lend : ledger.assembly(job).orElseThrow().lends()) {
            String id = lend.node() + "-holder-" + lend.holder().getAsLong();
            assertEquals(
                    "ok",
                    line(tracker.worker(
                            job,
                            lend.vgpu(),
                            new Endpoint("10.0.0." + lend.node().charAt(1), 39999 + lend.vgpu()),
                            id,
                            key.lendIssuer(Long.toString(job), lend.vgpu())
                                    .issue(
                                            Long.toString(job),
                                            lend.vgpu(),
                                            id,
                                            Optional.of(WORKER_CERTIFICATE),
                                            Duration.ofMinutes(1)))));
        }
    }

    private static String awaitOk(Tracker tracker, long job) {
        return line(tracker.assembly(job, "n1"));
    }

    /** The tracker's answers as the bridge reads them: the protocol writes every line. */
    private static String line(Answer answer) {
        return TrackerProtocol.line(answer);
    }

    private static List<String> statusLines(Tracker tracker) {
        return TrackerProtocol.lines(tracker.status());
    }

    private static final class MutableClock extends Clock {
        private Instant now;

        MutableClock(Instant now) {
            this.now = now;
        }

        void advance(Duration by) {
            now = now.plus(by);
        }

        @Override
        public Instant instant() {
            return now;
        }

        @Override
        public java.time.ZoneId getZone() {
            return ZoneOffset.UTC;
        }

        @Override
        public Clock withZone(java.time.ZoneId zone) {
            return this;
        }
    }
}
