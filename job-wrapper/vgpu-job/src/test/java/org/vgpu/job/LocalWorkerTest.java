package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.line.LineClient;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.workloads.VectorAddWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * The launcher's local worker, as a CUDA program's {@code libcuda.so.1} uses it: the Java client stands in for the
 * library, over the run's Unix socket, with the same protocol. The job's vGPUs (emulated GPUs 0 and 1, the agent on a
 * socket of its own) are opened at the first session, serve it, migrate under it, and outlive it.
 */
@Timeout(120)
class LocalWorkerTest {
    private static final int BYTES = 1 << 16;

    @TempDir
    Path directory;

    private final ByteArrayOutputStream said = new ByteArrayOutputStream();
    private EventLoopGroup group;
    private Path runDirectory;
    private Path agentSocket;
    private Map<String, String> environment;
    private JobAssembly assembly;

    @BeforeEach
    void job() throws IOException {
        group = NettyTransport.newEventLoopGroup(1, "test-library", 0);
        runDirectory = Files.createDirectory(
                directory.resolve("run"),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        agentSocket = directory.resolve("agent.sock");
        environment = new HashMap<>(Map.of(
                "VGPU_COUNT", "2",
                "VGPU_ASSEMBLY", "0=local:0,1=local:1",
                "VGPU_LOCAL_GPUS", "0,1",
                "CUDA_VISIBLE_DEVICES", "0,1",
                "VGPU_REMOTE", "",
                "VGPU_WINDOW_BASE", "0x200000000000",
                "VGPU_MIGRATE", "auto",
                "VGPU_NODE", "n1",
                "VGPU_SOURCE", "local-only-fallback",
                "VGPU_AGENT_SOCKET", agentSocket.toString()));
        environment.put("SLURM_JOB_ID", "42");
        assembly = JobAssembly.fromEnvironment(environment).orElseThrow();
    }

    @AfterEach
    void stopLibrary() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private LocalWorker start() {
        return LocalWorker.starter(
                        assembly, environment, "emulated", 4, new PrintStream(said, true, StandardCharsets.UTF_8))
                .start(runDirectory);
    }

    private RemoteGpu session(LocalWorker worker, VaWindow window) {
        return RemoteGpu.connect(
                group,
                WorkerEndpoint.onSocket("launcher", worker.socket(), "", () -> {}),
                window,
                RemoteConfig.defaults(),
                null);
    }

    private String said() {
        return said.toString(StandardCharsets.UTF_8);
    }

    private String agentStatus() {
        return String.join("\n", LineClient.request(agentSocket, "status", Duration.ofSeconds(10)));
    }

    @Test
    void theFirstSessionOpensTheJobsVgpusWhichMigrateUnderItAndOutliveIt() {
        try (LocalWorker worker = start();
                Arena arena = Arena.ofConfined()) {
            assertEquals(runDirectory.resolve(LocalWorker.SOCKET_NAME).toAbsolutePath(), worker.socket());
            assertTrue(Files.exists(worker.socket()));
            assertFalse(worker.used(), "nothing opened before a session");
            assertFalse(Files.exists(agentSocket), "no agent before a session: a Java program would open its own");

            MemorySegment written = arena.allocate(BYTES);
            for (int i = 0; i < BYTES; i++) {
                written.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            }
            try (RemoteGpu gpu = session(worker, assembly.window(0))) {
                assertTrue(worker.used());
                assertTrue(Files.exists(agentSocket), "the job's agent listens from the first session on");
                WorkloadResult result = new VectorAddWorkload().run(gpu, 1, 3);
                assertTrue(result.passed(), result.errorSummary());

                long address = gpu.memAlloc(BYTES);
                gpu.memcpyHtoD(address, written, BYTES);
                List<String> moved = LineClient.request(agentSocket, "migrate 0 1", Duration.ofSeconds(30));
                assertTrue(moved.getLast().startsWith("ok vgpu 0 moved gpu 0 (emulated) -> gpu 1"), moved.toString());
                MemorySegment read = arena.allocate(BYTES);
                gpu.memcpyDtoH(read, address, BYTES);
                assertArrayEquals(
                        written.toArray(ValueLayout.JAVA_BYTE),
                        read.toArray(ValueLayout.JAVA_BYTE),
                        "the session's data moved with its vGPU");
            }
            assertTrue(
                    agentStatus().contains("vgpu 0 on gpu 1 (emulated), 0 B live in 0 allocations, 1 migrations"),
                    "the session's goodbye freed what it made, and the vGPU stays, moved: " + agentStatus());

            // the program's next process: the same vGPU, empty, in the same window
            try (RemoteGpu next = session(worker, assembly.window(0))) {
                WorkloadResult again = new VectorAddWorkload().run(next, 1, 4);
                assertTrue(again.passed(), again.errorSummary());
            }
            assertTrue(
                    said().contains("vgpu run: the program opened a session: the job's 2 vGPU(s) are open in the"
                            + " launcher"),
                    said());
        }
        assertFalse(Files.exists(agentSocket), "the program's end closed the job's vGPUs and their agent");
    }

    @Test
    void aSessionWhileAJvmOfTheProgramHoldsTheVgpusIsRefused() throws IOException {
        try (LocalWorker worker = start();
                FileChannel channel = FileChannel.open(
                        runDirectory.resolve(InterposerPremain.OWNER_LOCK),
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE);
                FileLock jvmHolds = channel.lock()) {
            VgpuException refused = assertThrows(VgpuException.class, () -> session(worker, assembly.window(0)));
            assertEquals(ErrorCode.CUDA_ERROR_NOT_PERMITTED, refused.code(), refused.getMessage());
            assertTrue(
                    refused.getMessage()
                            .contains("a JVM of this program holds the job's vGPUs (a Java program run by vgpu run"
                                    + " opens them itself), so a process it starts cannot use them too"),
                    refused.getMessage());
            assertFalse(worker.used());
            assertFalse(Files.exists(agentSocket));
            assertTrue(jvmHolds.isValid());
        }
    }

    @Test
    void aWindowOrVgpuThatIsNotTheJobsIsRefusedNamingTheJobs() {
        try (LocalWorker worker = start()) {
            VgpuException elsewhere = assertThrows(VgpuException.class, () -> session(worker, VaWindow.forVgpu(1)));
            assertEquals(ErrorCode.VGPU_WINDOW_UNAVAILABLE, elsewhere.code(), elsewhere.getMessage());
            assertTrue(
                    elsewhere
                            .getMessage()
                            .contains(String.format(
                                    "the session asks for vGPU 1 at 0x%x, %d bytes; this job's vGPU 1 is at 0x%x, %d"
                                            + " bytes (VGPU_WINDOW_BASE)",
                                    VaWindow.forVgpu(1).base(),
                                    VaWindow.DEFAULT_SIZE,
                                    0x200000000000L + VaWindow.DEFAULT_SIZE,
                                    VaWindow.DEFAULT_SIZE)),
                    elsewhere.getMessage());

            VaWindow third = new VaWindow(2, 0x200000000000L + 2 * VaWindow.DEFAULT_SIZE, VaWindow.DEFAULT_SIZE);
            VgpuException none = assertThrows(VgpuException.class, () -> session(worker, third));
            assertEquals(ErrorCode.CUDA_ERROR_INVALID_DEVICE, none.code(), none.getMessage());
            assertTrue(none.getMessage().contains("vGPU 2 is not one of this job's 2 (0 to 1)"), none.getMessage());
        }
    }

    @Test
    void aProgramThatIsNotJavaRunsWithTheSocketInItsEnvironmentAndIsNotStopped() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int status = SubcommandRunner.run(
                new RunCommand(
                        environment,
                        duration -> {
                            throw new AssertionError("no hold");
                        },
                        Optional.of(directory.resolve("vgpu.jar"))),
                new String[] {
                    "--local-backend",
                    "emulated",
                    "--",
                    "sh",
                    "-c",
                    "test -S \"$" + LocalWorker.VARIABLE + "\" && echo socket at \"$" + LocalWorker.VARIABLE + "\""
                },
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String printed = out.toString(StandardCharsets.UTF_8) + err.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, printed);
        assertTrue(printed.matches("(?s)socket at /.*/vgpu-run-[^/]+/" + LocalWorker.SOCKET_NAME + "\n.*"), printed);
        assertFalse(printed.contains("not a Java program"), printed);
        assertFalse(Files.exists(agentSocket), "a program that opened no session leaves the vGPUs unopened");
    }
}
