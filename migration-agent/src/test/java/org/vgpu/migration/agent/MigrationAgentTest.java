package org.vgpu.migration.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.NetworkException;
import org.vgpu.migration.FaultPoint;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/** The agent's socket: commands, replies, malformed input, concurrency. */
@Timeout(60)
class MigrationAgentTest {
    @TempDir
    Path directory;

    private Path socket;
    private EmulatedBackend backend;
    private final List<MigrationReport> trackerReports = Collections.synchronizedList(new ArrayList<>());

    @BeforeEach
    void createBackend() {
        socket = directory.resolve("agent.sock");
        backend = new EmulatedBackend(3, 1L << 30, TestKernels.twins());
    }

    @AfterEach
    void closeBackend() {
        backend.close();
    }

    private MigrationAgent agent(MigrationFaults faults, int vgpus) {
        MigrationAgent agent = new MigrationAgent(
                socket,
                new NodeTargetResolver(backend),
                MigrationConfig.DEFAULTS.withVerifyCopies(true),
                trackerReports::add,
                faults);
        for (int k = 0; k < vgpus; k++) {
            agent.adopt(backend.open(0, VaWindow.forVgpu(k)), new MigrationTarget.LocalGpu(0));
        }
        return agent;
    }

    @Test
    void migratesOnCommandAndReportsStatusAndHistory() throws IOException {
        try (MigrationAgent agent = agent(MigrationFaults.NONE, 2);
                AgentClient client = new AgentClient(socket)) {
            MigratableGpu gpu = agentGpu(agent, 1);
            long data = gpu.memAlloc(5000);
            gpu.memsetD8(data, (byte) 0x3c, 5000);

            assertTrue(client.send("help").startsWith("ok commands: migrate <vgpu> <target>"));
            assertEquals(
                    "ok vgpu 0 on gpu 0 (emulated), 0 B live in 0 allocations, 0 migrations;"
                            + " vgpu 1 on gpu 0 (emulated), 5000 B live in 1 allocations, 0 migrations",
                    client.send("status"));
            assertEquals("ok no migrations", client.send("history"));

            String reply = client.send("migrate 1 2");
            assertTrue(reply.startsWith("ok vgpu 1 moved gpu 0 (emulated) -> gpu 2: open "), reply);
            assertTrue(reply.contains("mem-sync 5000 B in 1 regions"), reply);
            assertTrue(client.send("status")
                    .contains("vgpu 1 on gpu 2 (emulated), 5000 B live in 1 allocations, 1 migrations"));
            String history = client.send("history");
            assertTrue(
                    history.startsWith("ok 1 migrations: ")
                            && history.contains("vgpu 1 moved gpu 0 (emulated) -> gpu 2"),
                    history);
            assertEquals(1, trackerReports.size());
            assertTrue(trackerReports.getFirst().migrated());

            byte[] back = new byte[5000];
            gpu.memcpyDtoH(MemorySegment.ofArray(back), data, 5000);
            for (byte b : back) {
                assertEquals(0x3c, b);
            }
            assertTrue(client.send("  migrate\t1   0  ").startsWith("ok vgpu 1 moved gpu 2"), "blanks around words");
            String noDevice = client.send("migrate 1 9");
            assertTrue(noDevice.startsWith("error CUDA_ERROR_INVALID_DEVICE"), noDevice);
        }
    }

    @Test
    void statusSaysWhichVgpuIsMigratingWhileItsMoveRuns() throws Exception {
        CountDownLatch opened = new CountDownLatch(1);
        CountDownLatch goOn = new CountDownLatch(1);
        MigrationFaults pausedAtOpen = (point, index, target) -> {
            if (point == FaultPoint.OPEN_TARGET) {
                opened.countDown();
                try {
                    goOn.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try (MigrationAgent _ = agent(pausedAtOpen, 2);
                AgentClient mover = new AgentClient(socket);
                AgentClient asker = new AgentClient(socket)) {
            CompletableFuture<String> moved = CompletableFuture.supplyAsync(() -> {
                try {
                    return mover.send("migrate 1 2");
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            assertTrue(opened.await(60, TimeUnit.SECONDS), "the move reached OPEN_TARGET");
            assertEquals(
                    "ok vgpu 0 on gpu 0 (emulated), 0 B live in 0 allocations, 0 migrations;"
                            + " vgpu 1 on gpu 0 (emulated), 0 B live in 0 allocations, 0 migrations, migrating now",
                    asker.send("status"));
            goOn.countDown();
            assertTrue(moved.get(60, TimeUnit.SECONDS).startsWith("ok vgpu 1 moved gpu 0 (emulated) -> gpu 2"));
            assertFalse(asker.send("status").contains("migrating now"));
        } finally {
            goOn.countDown();
        }
    }

    @Test
    void aFailedMigrationIsAnErrorReplyAndInTheHistory() throws IOException {
        MigrationFaults noWindow = (point, index, target) -> {
            if (point == FaultPoint.OPEN_TARGET) {
                throw new VgpuException(ErrorCode.VGPU_WINDOW_UNAVAILABLE, "injected: window taken");
            }
        };
        try (MigrationAgent _ = agent(noWindow, 1);
                AgentClient client = new AgentClient(socket)) {
            String reply = client.send("migrate 0 1");
            assertTrue(
                    reply.startsWith("error VGPU_WINDOW_UNAVAILABLE: vgpu 0 stays on gpu 0 (emulated), migration to"
                            + " gpu 1 rolled back at OPEN_TARGET: VGPU_WINDOW_UNAVAILABLE: injected: window taken"),
                    reply);
            assertTrue(client.send("history").contains("rolled back at OPEN_TARGET"));
            assertFalse(trackerReports.getFirst().migrated());
            assertTrue(client.send("status").contains("vgpu 0 on gpu 0 (emulated)"));
        }
    }

    @Test
    void malformedCommandsGetAnErrorAndChangeNothing() throws IOException {
        List<String> malformed = List.of(
                "",
                "   ",
                "migrate",
                "migrate 0",
                "migrate 0 1 2",
                "migrate x 1",
                "migrate -1 1",
                "migrate 7 1",
                "migrate 0 -3",
                "migrate 0 host:",
                "migrate 0 :80",
                "migrate 0 host:99999",
                "migrate 0 host:port",
                "migrate 0001 1",
                "migrate 999 1",
                "migrate 99999999999999999999 1",
                "migrate 0 h@st:80",
                "status now",
                "history 3",
                "help me",
                "MIGRATE 0 1",
                "rm -rf /",
                "\u0000migrate 0 1",
                "migrate 0 1\u0007",
                "migrate\u00a00 1");
        try (MigrationAgent _ = agent(MigrationFaults.NONE, 1);
                AgentClient client = new AgentClient(socket)) {
            String status = client.send("status");
            for (String command : malformed) {
                String reply = client.send(command);
                assertTrue(reply.startsWith("error "), () -> "'" + command + "' got: " + reply);
                assertFalse(
                        reply.contains("CUDA_"),
                        () -> "bad input, not a GPU call's failure: '" + command + "' got: " + reply);
            }
            String binary = client.sendBytes(new byte[] {(byte) 0xff, (byte) 0xfe, 'x', (byte) 0xc3, '\n'});
            assertTrue(binary.startsWith("error unknown command"), binary);
            assertEquals(status, client.send("status"), "nothing changed");
            assertEquals("ok no migrations", client.send("history"));
            assertTrue(trackerReports.isEmpty());
        }
    }

    /** Before the refusal the emulated vGPU was copied onto its own GPU, as though it had moved. */
    @Test
    void aMigrationToWhereTheVgpuRunsIsRefusedAndMovesNothing() throws IOException {
        try (MigrationAgent agent = agent(MigrationFaults.NONE, 1);
                AgentClient client = new AgentClient(socket)) {
            assertEquals(
                    "error vGPU 0 already runs on gpu 0 (emulated): there is nothing to migrate",
                    client.send("migrate 0 0"));
            assertEquals(0, agentGpu(agent, 0).migrationCount());
            assertTrue(trackerReports.isEmpty(), "no migration was reported: " + trackerReports);
            assertEquals("ok no migrations", client.send("history"));
            assertTrue(client.send("migrate 0 1").startsWith("ok "), "a move elsewhere still goes");
        }
    }

    @Test
    void anOverlongLineEndsTheConnectionButNotTheAgent() throws IOException {
        try (MigrationAgent _ = agent(MigrationFaults.NONE, 1)) {
            try (AgentClient client = new AgentClient(socket)) {
                String reply = client.send("migrate 0 " + "1".repeat(MigrationAgent.MAX_LINE_BYTES));
                assertEquals("error line longer than 512 bytes; closing the connection", reply);
                assertNull(client.readLine(), "the agent closed the connection");
            }
            try (AgentClient client = new AgentClient(socket)) {
                assertTrue(client.send("status").startsWith("ok vgpu 0 on gpu 0"));
            }
        }
    }

    @Test
    void clientsAtOnceEachGetTheirOwnReplies() throws Exception {
        int vgpus = 4;
        ExecutorService clients = Executors.newFixedThreadPool(2 * vgpus);
        try (MigrationAgent agent = agent(MigrationFaults.NONE, vgpus)) {
            List<Future<List<String>>> results = new ArrayList<>();
            for (int k = 0; k < vgpus; k++) {
                int vgpu = k;
                results.add(clients.submit(() -> {
                    List<String> replies = new ArrayList<>();
                    try (AgentClient client = new AgentClient(socket)) {
                        for (int m = 1; m <= 6; m++) {
                            replies.add(client.send("migrate " + vgpu + " " + m % 3));
                        }
                    }
                    return replies;
                }));
                results.add(clients.submit(() -> {
                    List<String> replies = new ArrayList<>();
                    for (int i = 0; i < 10; i++) {
                        try (AgentClient client = new AgentClient(socket)) {
                            replies.add(client.send(i % 2 == 0 ? "status" : "history"));
                        }
                    }
                    return replies;
                }));
            }
            for (Future<List<String>> result : results) {
                for (String reply : result.get(30, TimeUnit.SECONDS)) {
                    assertTrue(reply.startsWith("ok "), reply);
                }
            }
            for (int k = 0; k < vgpus; k++) {
                assertEquals(6, agentGpu(agent, k).migrationCount());
                assertEquals("gpu 0 (emulated)", agentGpu(agent, k).location());
            }
            assertEquals(vgpus * 6, trackerReports.size());
        } finally {
            clients.shutdownNow();
        }
    }

    @Test
    void aStaleSocketFileIsReplacedALiveAgentIsNot() throws IOException {
        // A crashed app leaves its socket file behind: bound once, closed without removing it.
        try (ServerSocketChannel crashed = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            crashed.bind(UnixDomainSocketAddress.of(socket));
        }
        assertTrue(Files.exists(socket), "the stale socket file stays behind");
        try (MigrationAgent _ = agent(MigrationFaults.NONE, 0)) {
            NetworkException taken = assertThrows(NetworkException.class, () -> agent(MigrationFaults.NONE, 0));
            assertTrue(taken.getMessage().contains("another migration agent listens"), taken.getMessage());
            try (AgentClient client = new AgentClient(socket)) {
                assertEquals("ok no vGPUs", client.send("status"));
            }
        }
        assertFalse(Files.exists(socket), "close removes the socket file");
    }

    @Test
    void aStaleSocketInADirectoryOthersCanReachIsNeverDeleted() throws IOException {
        // Not the job's agent socket directory (the user's alone, mode 0700): a socket nobody answers on here may be
        // another program's, e.g. one between its restarts, so the agent must not take its place.
        Path shared = Files.createDirectory(directory.resolve("shared"));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        socket = shared.resolve("other-program.sock");
        try (ServerSocketChannel other = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            other.bind(UnixDomainSocketAddress.of(socket));
        }
        NetworkException refused = assertThrows(NetworkException.class, () -> agent(MigrationFaults.NONE, 0));
        assertEquals(
                "the migration agent cannot listen on " + socket + ": a socket nobody answers on is there, but "
                        + shared + " is not this user's alone (the job's agent socket directory is, mode 0700), so"
                        + " it may be another program's; nothing was deleted: remove it or choose another path",
                refused.getMessage());
        assertTrue(Files.exists(socket, LinkOption.NOFOLLOW_LINKS), "the other program's socket stays");
    }

    @Test
    void aFileThatIsNotASocketIsNeverDeleted() throws IOException {
        Files.writeString(socket, "an admin's file", StandardCharsets.UTF_8);
        NetworkException refused = assertThrows(NetworkException.class, () -> agent(MigrationFaults.NONE, 0));
        assertTrue(refused.getMessage().contains("not a socket"), refused.getMessage());
        assertEquals("an admin's file", Files.readString(socket, StandardCharsets.UTF_8));
    }

    @Test
    void adoptingTwoVgpusOfOneIndexIsRefused() {
        try (MigrationAgent agent = agent(MigrationFaults.NONE, 1)) {
            var duplicate = backend.open(1, VaWindow.forVgpu(0));
            VgpuException e =
                    assertThrows(VgpuException.class, () -> agent.adopt(duplicate, new MigrationTarget.LocalGpu(1)));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
            duplicate.close();
        }
    }

    private static MigratableGpu agentGpu(MigrationAgent agent, int vgpu) {
        return agent.vgpu(vgpu);
    }
}
