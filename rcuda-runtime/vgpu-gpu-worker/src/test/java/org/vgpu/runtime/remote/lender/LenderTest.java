package org.vgpu.runtime.remote.lender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SignedRequest;
import org.vgpu.common.security.SiteKey;
import org.vgpu.runtime.remote.lender.WorkerStatus.State;

/** {@link Lender} over its control socket, with {@link FakeWorker} processes as workers. */
@Timeout(90)
class LenderTest {
    private final ChildProcesses children = ChildProcesses.snapshot();

    @TempDir
    Path dir;

    Path keyFile;
    private final WorkerLauncher fakeWorkers = new WorkerLauncher(FakeWorker.class.getName(), Duration.ofSeconds(30));
    private final List<Lender> lenders = new ArrayList<>();

    @BeforeEach
    void writeSiteKey() {
        keyFile = dir.resolve("site.key");
        SiteKey.generate().writeNewFile(keyFile);
    }

    @AfterEach
    void closeLendersAndCheckNoWorkerIsLeft() {
        lenders.forEach(Lender::close);
        assertEquals(List.of(), children.killLeftovers());
    }

    @Test
    void thePoolFillsForEveryDevice() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0, 1), 2, 2), fakeWorkers);
        Await.until(() -> count(lender, State.WARM) == 4);

        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            List<String> status = control.request("status");
            assertEquals("ok 4", status.getLast());
            assertEquals(4, status.size() - 1, status.toString());
            for (String line : status.subList(0, 4)) {
                assertTrue(line.matches("worker [01] \\S+-d[01]-[0-9a-f]{8} 127\\.0\\.0\\.1:\\d+ warm \\d+s"), line);
            }
        }
    }

    @Test
    void openHandsOutAWarmWorkerAndThePoolRefills() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 1, 2), fakeWorkers);
        Await.until(() -> count(lender, State.WARM) == 1);
        WorkerStatus warm = lender.status().getFirst();

        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            assertEquals("ok " + warm.endpoint().orElseThrow() + " " + warm.workerId(), control.ask("open 0"));
        }
        Await.until(() -> count(lender, State.WARM) == 1 && count(lender, State.LENT) == 1);
        WorkerStatus refill = lender.status().stream()
                .filter(worker -> worker.state() == State.WARM)
                .findFirst()
                .orElseThrow();
        assertNotEquals(warm.workerId(), refill.workerId());
    }

    @Test
    void openStartsAWorkerWhenNoneIsWarm() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(3), 0, 1), fakeWorkers);
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            String reply = control.ask("open 3");
            assertTrue(reply.matches("ok 127\\.0\\.0\\.1:\\d+ \\S+-d3-[0-9a-f]{8}"), reply);
            Endpoint endpoint = Endpoint.parse(reply.split(" ")[1]);
            assertEquals("ping", WorkerLauncherTest.echo(endpoint, "ping"));
        }
        assertEquals(0, count(lender, State.WARM));
    }

    @Test
    void aDeviceLendsNoMoreThanItsLimitAndKeepsNoWarmWorkerItCouldNotLend() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 2, 2), fakeWorkers);
        Await.until(() -> count(lender, State.WARM) == 2);
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            assertTrue(control.ask("open 0").startsWith("ok "));
            assertEquals(1, count(lender, State.WARM) + count(lender, State.STARTING));
            assertTrue(control.ask("open 0").startsWith("ok "));
            assertEquals(
                    "error device 0 already has 2 lent worker(s), the most this lender hands out per device",
                    control.ask("open 0"));
        }
        assertEquals(0, count(lender, State.WARM) + count(lender, State.STARTING));
    }

    @Test
    void aWorkerThatServedItsSessionIsReapedAndTheDeviceCanLendAgain() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 1, 1), fakeWorkers);
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            String reply = control.ask("open 0");
            String lentId = reply.split(" ")[2];
            assertEquals("session", WorkerLauncherTest.echo(Endpoint.parse(reply.split(" ")[1]), "session"));

            Await.until(() -> lender.status().stream()
                    .noneMatch(worker -> worker.workerId().equals(lentId)));
            Await.until(() -> count(lender, State.WARM) == 1);
            assertTrue(control.ask("open 0").startsWith("ok "));
        }
    }

    @Test
    void closingALentWorkerStopsItAndFreesTheDevicesLentSlot() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 0, 1), fakeWorkers);
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            String lentId = control.ask("open 0").split(" ")[2];
            assertTrue(control.ask("open 0").startsWith("error device 0 already has 1 lent worker(s)"));
            assertEquals(
                    "error no lent worker 'nobody-d0-1' (it may have ended already)", control.ask("close nobody-d0-1"));
            assertEquals("usage: close <worker-id>", control.ask("close").substring("error ".length()));

            assertEquals("ok closed " + lentId, control.ask("close " + lentId));

            Await.until(() -> lender.status().stream()
                    .noneMatch(worker -> worker.workerId().equals(lentId)));
            assertTrue(control.ask("open 0").startsWith("ok "));
        }
    }

    @Test
    void aStrangerCanNeitherEndALendNorTakeASlotNorListWorkers() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 0, 2), fakeWorkers);
        String lentId;
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            lentId = control.ask("open 0").split(" ")[2];
        }
        Instant soon = Instant.now().plusSeconds(30);
        SiteKey otherKey = SiteKey.generate();
        try (ControlClient stranger = ControlClient.unsigned(lender.controlEndpoint())) {
            for (String request : List.of("close " + lentId, "open 0", "status")) {
                assertEquals(
                        "error unauthenticated: the request is not signed with the site key (REQUEST"
                                + " expires=UNIX-SECONDS nonce=HEX mac=HMAC-SHA256-HEX)",
                        stranger.ask(request),
                        request);
                assertEquals(
                        "error unauthenticated: the request's signature does not match (signed with another key, or"
                                + " altered)",
                        stranger.ask(SignedRequest.sign(otherKey, ControlProtocol.PURPOSE, request, soon)));
            }
            String signedForAnotherSocket = SignedRequest.sign(SiteKey.load(keyFile), "vgpu-other", "open 0", soon);
            assertTrue(stranger.ask(signedForAnotherSocket)
                    .startsWith("error unauthenticated: the request's" + " signature does not match"));
            String altered = SignedRequest.sign(SiteKey.load(keyFile), ControlProtocol.PURPOSE, "open 0", soon)
                    .replaceFirst("^open 0", "close " + lentId);
            assertTrue(stranger.ask(altered).startsWith("error unauthenticated: the request's signature does not"));
            String expired = SignedRequest.sign(
                    SiteKey.load(keyFile),
                    ControlProtocol.PURPOSE,
                    "close " + lentId,
                    Instant.now().minusSeconds(60));
            assertTrue(stranger.ask(expired).startsWith("error unauthenticated: the request's signature expired at"));

            // A signed request seen on the wire is accepted once: sent again, it is refused.
            String seen = SignedRequest.sign(SiteKey.load(keyFile), ControlProtocol.PURPOSE, "status", soon);
            assertTrue(stranger.request(seen).getFirst().startsWith("worker 0 " + lentId));
            assertEquals(
                    "error unauthenticated: the request was sent before (a signed request is accepted once)",
                    stranger.ask(seen));
        }
        assertEquals(
                List.of(lentId),
                lender.status().stream().map(WorkerStatus::workerId).toList());
        assertEquals(1, count(lender, State.LENT), "the job's lent worker still serves it, no slot was taken");
    }

    @Test
    void anOpenWhoseRequesterLeftBeforeTheReplyGivesItsSlotBackAtOnce() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 0, 1), fakeWorkers);
        Endpoint control = lender.controlEndpoint();
        String open = SignedRequest.sign(
                SiteKey.load(keyFile),
                ControlProtocol.PURPOSE,
                "open 0",
                Instant.now().plusSeconds(30));
        try (Socket requester = new Socket(control.host(), control.port())) {
            requester.getOutputStream().write((open + "\n").getBytes(StandardCharsets.US_ASCII));
        } // gone while the lender starts the worker it asked for
        Await.until(() -> !lender.status().isEmpty());
        Await.until(() -> lender.status().isEmpty());
        try (ControlClient again = new ControlClient(control, keyFile)) {
            assertTrue(again.ask("open 0").startsWith("ok "), "the device's only lend slot is free again");
        }
    }

    @Test
    void aWarmWorkerThatDiesIsReplaced() {
        Lender lender = start(config("127.0.0.1", List.of(0), 1, 1), fakeWorkers);
        Await.until(() -> count(lender, State.WARM) == 1);
        String firstId = lender.status().getFirst().workerId();

        children.started().forEach(ProcessHandle::destroyForcibly);

        Await.until(() -> lender.status().stream()
                .anyMatch(worker ->
                        worker.state() == State.WARM && !worker.workerId().equals(firstId)));
    }

    @Test
    void aWarmWorkerWhoseIdleTimeoutExpiresIsReplaced() {
        LenderConfig config = new LenderConfig(
                new Endpoint("127.0.0.1", 0),
                "emulated",
                List.of(0),
                keyFile,
                1,
                1,
                Optional.of(Duration.ofSeconds(1)),
                Optional.empty());
        Lender lender = start(config, fakeWorkers);
        java.util.Set<String> warmIds = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Await.until(() -> {
            lender.status().stream()
                    .filter(worker -> worker.state() == State.WARM)
                    .forEach(worker -> warmIds.add(worker.workerId()));
            return warmIds.size() >= 3;
        });
    }

    @Test
    void unknownDevicesAndMalformedRequestsGetErrorsAndChangeNothing() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 1, 1), fakeWorkers);
        Await.until(() -> count(lender, State.WARM) == 1);
        List<WorkerStatus> before = lender.status();

        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            assertEquals("error device 7 is not lent by this node (it lends [0])", control.ask("open 7"));
            assertEquals("error device -7 is not lent by this node (it lends [0])", control.ask("open -7"));
            assertEquals("error device must be a number, got 'zero'", control.ask("open zero"));
            assertEquals("error device must be a number, got '99999999999'", control.ask("open 99999999999"));
            assertEquals("error usage: open <device>", control.ask("open"));
            assertEquals("error usage: open <device>", control.ask("open 0 1"));
            assertEquals("error usage: status", control.ask("status please"));
            assertEquals(
                    "error unknown command 'quit'; commands: open <device>, close <worker-id>, status",
                    control.ask("quit"));
            assertEquals(
                    "error unknown command 'OPEN'; commands: open <device>, close <worker-id>, status",
                    control.ask("OPEN 0"));
            assertEquals("error empty request; commands: open <device>, close <worker-id>, status", control.ask(""));
            assertEquals(
                    "error empty request; commands: open <device>, close <worker-id>, status", control.ask("   \t "));
            assertEquals("error request longer than 256 bytes", control.ask("open " + "0".repeat(1000)));
            assertEquals(
                    "error request holds characters that are not printable ASCII",
                    control.requestRaw(new byte[] {'o', 'p', 0, (byte) 0xff, '\n'})
                            .getFirst());
            assertEquals("error request holds characters that are not printable ASCII", control.ask("stätus"));
            assertEquals(
                    List.of("error request longer than 256 bytes"),
                    control.requestRaw(("status" + " ".repeat(100_000) + "\n").getBytes(StandardCharsets.US_ASCII)));

            List<String> status = control.request("status\r");
            assertEquals("ok 1", status.getLast());
        }
        assertEquals(
                before.stream().map(WorkerStatus::workerId).toList(),
                lender.status().stream().map(WorkerStatus::workerId).toList());
        assertEquals(State.WARM, lender.status().getFirst().state());
    }

    @Test
    void randomBytesNeverBreakTheControlSocket() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 0, 1), fakeWorkers);
        java.util.Random random = new java.util.Random(7);
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            for (int i = 0; i < 300; i++) {
                byte[] garbage = new byte[1 + random.nextInt(600)];
                random.nextBytes(garbage);
                for (int j = 0; j < garbage.length; j++) {
                    if (garbage[j] == '\n') {
                        garbage[j] = 'x';
                    }
                }
                garbage[garbage.length - 1] = '\n';
                List<String> replies = control.requestRaw(garbage);
                assertEquals(1, replies.size(), replies.toString());
                assertTrue(replies.getFirst().startsWith("error "), replies.getFirst());
                assertTrue(replies.getFirst().chars().allMatch(c -> c >= ' ' && c <= '~'), replies.getFirst());
            }
            assertEquals(List.of("ok 0"), control.request("status"));
        }
    }

    @Test
    void aWorkerOnAWildcardAddressIsReportedAtTheAddressTheRequestReached() throws IOException {
        Lender lender = start(config("0.0.0.0", List.of(0), 0, 1), fakeWorkers);
        try (ControlClient control = new ControlClient(
                new Endpoint("127.0.0.1", lender.controlEndpoint().port()), keyFile)) {
            String reply = control.ask("open 0");
            assertTrue(reply.matches("ok 127\\.0\\.0\\.1:\\d+ \\S+"), reply);
            assertEquals("x", WorkerLauncherTest.echo(Endpoint.parse(reply.split(" ")[1]), "x"));
        }
    }

    @Test
    void workersThatCannotStartGiveAOneLineErrorAndTheLenderStaysUp() throws IOException {
        WorkerLauncher broken = new WorkerLauncher("org.vgpu.NoSuchWorker", Duration.ofSeconds(30));
        Lender lender = start(config("127.0.0.1", List.of(0), 1, 1), broken);
        try (ControlClient control = new ControlClient(lender.controlEndpoint(), keyFile)) {
            String reply = control.ask("open 0");
            assertTrue(reply.startsWith("error GPU worker "), reply);
            assertTrue(reply.contains("org.vgpu.NoSuchWorker"), reply);
            assertTrue(reply.contains(" | "), reply);
            assertTrue(control.request("status").getLast().startsWith("ok "));
        }
    }

    @Test
    void connectionsBeyondTheLimitAreRefusedWithAReason() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0), 0, 1), fakeWorkers);
        List<ControlClient> clients = new ArrayList<>();
        try {
            for (int i = 0; i < Lender.CONTROL_LIMITS.maxConnections(); i++) {
                ControlClient client = new ControlClient(lender.controlEndpoint(), keyFile);
                clients.add(client);
                assertEquals("ok 0", client.ask("status"));
            }
            try (ControlClient oneTooMany = new ControlClient(lender.controlEndpoint(), keyFile)) {
                assertEquals("error too many lender control connections (32), try again later", oneTooMany.readLine());
                assertEquals(null, oneTooMany.readLine());
            }
        } finally {
            for (ControlClient client : clients) {
                client.close();
            }
        }
        Await.until(() -> {
            try (ControlClient again = new ControlClient(lender.controlEndpoint(), keyFile)) {
                return again.ask("status").equals("ok 0");
            } catch (IOException e) {
                return false;
            }
        });
    }

    @Test
    void startingRefusesABadKeyFileAndLeavesNothingRunning() throws IOException {
        Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("rw-rw-r--"));
        ConfigException refused = assertThrows(
                ConfigException.class, () -> Lender.start(config("127.0.0.1", List.of(0), 1, 1), fakeWorkers));
        assertTrue(refused.getMessage().contains("chmod 600"), refused.getMessage());
    }

    @Test
    void startingOnAPortInUseFailsClearly() {
        Lender first = start(config("127.0.0.1", List.of(0), 0, 1), fakeWorkers);
        LenderConfig clash = new LenderConfig(
                first.controlEndpoint(), "emulated", List.of(0), keyFile, 1, 1, Optional.empty(), Optional.empty());
        NetworkException refused = assertThrows(NetworkException.class, () -> Lender.start(clash, fakeWorkers));
        assertTrue(
                refused.getMessage()
                        .contains("cannot listen for lender control connections on " + first.controlEndpoint()),
                refused.getMessage());
    }

    @Test
    void closingStopsLentAndWarmWorkersAndRefusesFurtherRequests() throws IOException {
        Lender lender = start(config("127.0.0.1", List.of(0, 1), 1, 1), fakeWorkers);
        assertEquals(1, lender.open(1).device());
        Await.until(() -> count(lender, State.WARM) == 2);

        lender.close();

        assertEquals(List.of(), children.started());
        LendingException closed = assertThrows(LendingException.class, () -> lender.open(0));
        assertEquals(LendingException.Code.CLOSING, closed.code());
        assertThrows(IOException.class, () -> new ControlClient(lender.controlEndpoint(), keyFile).ask("status"));
        lender.close();
    }

    @Test
    void configurationsThatMakeNoSenseAreRefused() {
        assertInvalid(() -> config("127.0.0.1", List.of(), 1, 1));
        assertInvalid(() -> config("127.0.0.1", List.of(0, 0), 1, 1));
        assertInvalid(() -> config("127.0.0.1", List.of(-1), 1, 1));
        assertInvalid(() -> config("127.0.0.1", List.of(0), -1, 1));
        assertInvalid(
                () -> config("127.0.0.1", List.of(0), LenderConfig.MAX_POOL_SIZE + 1, LenderConfig.MAX_POOL_SIZE + 1));
        assertInvalid(() -> config("127.0.0.1", List.of(0), 1, 0));
        assertInvalid(() -> config("127.0.0.1", List.of(0), 3, 2));
        assertInvalid(() -> new LenderConfig(
                new Endpoint("127.0.0.1", 0), "auto", List.of(0), keyFile, 1, 1, Optional.empty(), Optional.empty()));
    }

    private LenderConfig config(String host, List<Integer> devices, int poolSize, int maxLent) {
        return new LenderConfig(
                new Endpoint(host, 0),
                "emulated",
                devices,
                keyFile,
                poolSize,
                maxLent,
                Optional.empty(),
                Optional.empty());
    }

    private Lender start(LenderConfig config, WorkerLauncher launcher) {
        Lender lender = Lender.start(config, launcher);
        lenders.add(lender);
        return lender;
    }

    private static long count(Lender lender, State state) {
        return lender.status().stream()
                .filter(worker -> worker.state() == state)
                .count();
    }

    private static void assertInvalid(org.junit.jupiter.api.function.Executable call) {
        assertEquals(
                ConfigException.Code.INVALID,
                assertThrows(ConfigException.class, call).code());
    }
}
