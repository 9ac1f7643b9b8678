package org.vgpu.runtime.remote.worker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.error.AuthException;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.TokenIssuer;
import org.vgpu.common.security.TokenVerifier;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.workloads.VectorAddWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/** {@code vgpu worker} as a launcher sees it: its options, its two stdout lines, its exit status. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class WorkerCommandTest {
    @TempDir
    Path directory;

    private Path keyFile;
    private SiteKey key;
    private EventLoopGroup group;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @BeforeEach
    void writeKey() {
        key = SiteKey.generate();
        keyFile = directory.resolve("site.key");
        key.writeNewFile(keyFile);
        group = NettyTransport.newEventLoopGroup(1, "test-client", 0);
    }

    @AfterEach
    void stopClient() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    private CompletableFuture<Integer> start(String... args) {
        return start(new WorkerCommand(), args);
    }

    private CompletableFuture<Integer> start(WorkerCommand command, String... args) {
        PrintStream stdout = new PrintStream(out, true, StandardCharsets.UTF_8);
        PrintStream stderr = new PrintStream(err, true, StandardCharsets.UTF_8);
        return CompletableFuture.supplyAsync(() -> SubcommandRunner.run(command, args, stdout, stderr));
    }

    private int run(String... args) {
        return start(args).join();
    }

    /** A worker given every required option, to listen on any port of 127.0.0.1, and then {@code option value}. */
    private int runListeningWith(String option, String value) {
        return run("--listen", "127.0.0.1:0", "--worker-id", "w", "--key-file", keyFile.toString(), option, value);
    }

    /** This process's tuning with {@code property} set to {@code value}. */
    private static RemoteTuning tunedWith(String property, String value) {
        Properties properties = new Properties();
        properties.putAll(System.getProperties());
        properties.setProperty(property, value);
        return RemoteTuning.fromProperties(properties);
    }

    private List<String> stdout() {
        return out.toString(StandardCharsets.UTF_8).lines().toList();
    }

    /** The port of the listening line, once it is printed. */
    private int awaitListening() throws InterruptedException {
        for (int i = 0; i < 500; i++) {
            for (String line : stdout()) {
                if (line.startsWith("vgpu-worker listening 127.0.0.1:")) {
                    return Integer.parseInt(line.substring(line.lastIndexOf(':') + 1));
                }
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no listening line; stderr: " + err);
    }

    private String[] emulatedWorker(String id, int idleSeconds) {
        return new String[] {
            "--listen",
            "127.0.0.1:0",
            "--backend",
            "emulated",
            "--worker-id",
            id,
            "--key-file",
            keyFile.toString(),
            "--idle-timeout",
            Integer.toString(idleSeconds)
        };
    }

    private RemoteGpu connect(int port, String workerId, String tokenWorkerId) {
        return connect(port, workerId, tokenWorkerId, VaWindow.forVgpu(0));
    }

    /** A session on {@code window}, with a token for vGPU 0 in its usual window (what the tracker issues). */
    private RemoteGpu connect(int port, String workerId, String tokenWorkerId, VaWindow window) {
        String token = new TokenIssuer(key, Clock.systemUTC()).issue("job-1", 0, tokenWorkerId, Duration.ofMinutes(1));
        return RemoteGpu.connect(
                group,
                new WorkerEndpoint(workerId, "127.0.0.1", port, token, () -> {}),
                window,
                RemoteConfig.defaults(),
                null);
    }

    @Test
    void servesOneSessionAndSaysWhatItServed() throws Exception {
        CompletableFuture<Integer> status = start(emulatedWorker("node1-gpu0", 30));
        int port = awaitListening();
        try (RemoteGpu gpu = connect(port, "node1-gpu0", "node1-gpu0")) {
            WorkloadResult result = new VectorAddWorkload().run(gpu, 1, 5);
            assertTrue(result.passed(), result.errorSummary());
        }
        assertEquals(0, status.get(30, TimeUnit.SECONDS), err.toString());
        List<String> lines = stdout();
        assertEquals(2, lines.size(), lines.toString());
        assertTrue(
                lines.get(1).matches("vgpu-worker served calls=\\d+ bytes_in=\\d+ bytes_out=\\d+ busy_ms=\\d+"),
                lines.get(1));
        assertTrue(
                Long.parseLong(lines.get(1).replaceAll(".*bytes_in=(\\d+).*", "$1")) > 2 * 65536 * 4,
                "both input vectors went in: " + lines.get(1));
        assertTrue(err.toString().contains("[CPU EMULATION, not a GPU]"), err.toString());
    }

    @Test
    void refusesATokenForAnotherWorkerAndWaitsForItsOwnClient() throws Exception {
        CompletableFuture<Integer> status = start(emulatedWorker("node1-gpu0", 30));
        int port = awaitListening();
        VgpuException refused = assertThrows(VgpuException.class, () -> connect(port, "node1-gpu0", "node2-gpu5"));
        assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code());
        assertTrue(
                refused.getMessage()
                                .startsWith("VGPU_AUTH_FAILED: worker node1-gpu0 at 127.0.0.1:" + port
                                        + " refused the session: ")
                        && refused.getMessage().contains("issued for worker node2-gpu5, this is worker node1-gpu0"),
                refused.getMessage());
        connect(port, "node1-gpu0", "node1-gpu0").close();
        assertEquals(0, status.get(30, TimeUnit.SECONDS));
    }

    /**
     * A token for vGPU 0 does not open vGPU 5's window (or a larger one) under vGPU 0's index: a job's vGPUs' windows
     * are disjoint, and a session in another vGPU's window could reach addresses that vGPU's migration maps there.
     */
    @Test
    void refusesATokenForOneVgpusWindowWhenTheSessionAsksForAnother() throws Exception {
        CompletableFuture<Integer> status = start(emulatedWorker("node1-gpu0", 30));
        int port = awaitListening();
        VaWindow vgpu5 = VaWindow.forVgpu(5);
        List<VaWindow> foreignWindows = List.of(
                new VaWindow(0, vgpu5.base(), vgpu5.size()),
                new VaWindow(0, VaWindow.DEFAULT_BASE, 2 * VaWindow.DEFAULT_SIZE));
        for (VaWindow asked : foreignWindows) {
            VgpuException refused = assertThrows(
                    VgpuException.class, () -> connect(port, "node1-gpu0", "node1-gpu0", asked), asked::toString);
            assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code());
            assertTrue(
                    refused.getMessage()
                            .endsWith("refused the session: session token of job job-1 was issued for "
                                    + VaWindow.forVgpu(0) + ", the session asks for " + asked),
                    refused.getMessage());
        }
        connect(port, "node1-gpu0", "node1-gpu0").close();
        assertEquals(0, status.get(30, TimeUnit.SECONDS), "the worker served its own client after the refusals");
    }

    @Test
    void givesUpWhenNoClientComes() throws Exception {
        assertEquals(1, start(emulatedWorker("lonely", 1)).get(30, TimeUnit.SECONDS));
        assertEquals(List.of("vgpu-worker served calls=0 bytes_in=0 bytes_out=0 busy_ms=0"), stdout().subList(1, 2));
        assertTrue(err.toString().contains("no client opened a session within 1000 ms"), err.toString());
    }

    @Test
    void anEmulatedWorkerWarmsUpOnlyWhenAskedTo() throws Exception {
        assertEquals(1, start(emulatedWorker("cold", 1)).get(30, TimeUnit.SECONDS));
        assertFalse(err.toString().contains("warmed up"), err.toString());
        RemoteTuning warmUpAlways = tunedWith(RemoteTuning.WORKER_WARM_UP, "true");
        assertEquals(
                1,
                start(new WorkerCommand(() -> warmUpAlways), emulatedWorker("warm", 1))
                        .get(30, TimeUnit.SECONDS));
        assertTrue(
                err.toString()
                        .matches("(?s).*vgpu worker warm: .*, warmed up in \\d+ ms, then \\d+ ms for the JIT to .*"),
                err.toString());
    }

    @Test
    void badOptionsAreUsageErrors() {
        assertEquals(2, run());
        assertEquals(2, run("--listen", "nowhere", "--worker-id", "w", "--key-file", keyFile.toString()));
        assertEquals(2, runListeningWith("--backend", "gpu"));
        assertEquals(2, runListeningWith("--tls-cert", "c.pem"));
        assertEquals(2, runListeningWith("--idle-timeout", "0"));
        assertTrue(stdout().isEmpty(), "nothing on stdout but the two contract lines");
    }

    @Test
    void aTuningPropertyItCannotUseIsAUsageErrorNamingThePropertyAndItsRange() {
        WorkerCommand badChunk = new WorkerCommand(() -> tunedWith(RemoteTuning.CHUNK_KIB, "abc"));
        assertEquals(2, start(badChunk, emulatedWorker("w", 1)).join());
        assertTrue(
                err.toString()
                        .contains("vgpu worker: -Dvgpu.chunk.kib=abc: expected a whole number from 4 to 16383 (KiB)"),
                err.toString());
        assertTrue(stdout().isEmpty(), "it never listened: " + stdout());
    }

    /** The whole path: the system property as a launcher's JAVA_TOOL_OPTIONS would set it, read at the worker's start. */
    @Test
    void aWorkerProcessGivenATuningPropertyItCannotUseExitsBeforeListening() throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(
                java,
                "--enable-native-access=ALL-UNNAMED",
                "-Dvgpu.chunk.kib=99999",
                "-cp",
                System.getProperty("java.class.path"),
                WorkerCommand.class.getName()));
        command.addAll(List.of(emulatedWorker("w", 1)));
        Process worker = new ProcessBuilder(command)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        CompletableFuture<String> stderr = CompletableFuture.supplyAsync(() -> readAll(worker.getErrorStream()));
        String stdout = readAll(worker.getInputStream());
        assertTrue(worker.waitFor(30, TimeUnit.SECONDS), "the worker did not exit");
        assertEquals(2, worker.exitValue(), stderr.join());
        assertTrue(
                stderr.join()
                        .contains("vgpu worker: -Dvgpu.chunk.kib=99999: expected a whole number from 4 to 16383 (KiB)"),
                stderr.join());
        assertEquals("", stdout, "it never listened");
    }

    /** The real signal: scancel of a holder sends its worker SIGTERM, and the worker says it leaves before it exits. */
    @Test
    void aHolderWorkerProcessToldToTerminateTellsTheTrackerItLeaves() throws Exception {
        List<String> requests = new CopyOnWriteArrayList<>();
        try (LineServer tracker = LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", 4096, 4, Duration.ofSeconds(5)),
                (request, host) -> {
                    requests.add(request.text());
                    return List.of(
                            request.text().startsWith("worker-leaving ")
                                    ? "error node n1 has no free GPU for vGPU 1 of job 42 now"
                                    : "ok");
                })) {
            List<String> command = holderWorkerProcess();
            command.addAll(List.of("--tracker", tracker.endpoint().toString(), "--lend", "42:1"));
            Process worker = new ProcessBuilder(command)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
            CompletableFuture<String> stderr = CompletableFuture.supplyAsync(() -> readAll(worker.getErrorStream()));
            BufferedReader stdout =
                    new BufferedReader(new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8));
            assertTrue(stdout.readLine().startsWith("vgpu-worker listening 127.0.0.1:"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (requests.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertTrue(requests.getFirst().startsWith("worker 42 1 127.0.0.1:"), requests.toString());

            worker.toHandle().destroy(); // SIGTERM; Process.destroy would also close our ends of its streams
            assertTrue(worker.waitFor(30, TimeUnit.SECONDS), "the worker did not exit");
            assertEquals(2, requests.size(), requests.toString());
            assertTrue(requests.get(1).startsWith("worker-leaving 42 1 n2-holder-43 "), requests.toString());
            assertTrue(
                    stderr.join()
                            .contains("vgpu worker n2-holder-43: leaving (holder cancelled): nothing moves the vGPU:"
                                    + " error node n1 has no free GPU for vGPU 1 of job 42 now"),
                    stderr.join());
        }
    }

    /**
     * A holder run as the borrowing user: its worker gets its lend's key from the environment (never the site key),
     * proves itself to the tracker with it, and refuses the session of any other job, whose tokens the tracker signs
     * with that job's lend key.
     */
    @Test
    void aHolderWorkerWithItsLendsKeyProvesThatLendAndRefusesAnotherJobsSession() throws Exception {
        SiteKey lendKey = key.forLend("42", 0);
        List<String> requests = new CopyOnWriteArrayList<>();
        try (LineServer tracker = LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("fake tracker", 4096, 4, Duration.ofSeconds(5)),
                (request, host) -> {
                    requests.add(request.text());
                    return List.of("ok");
                })) {
            List<String> command = holderWorkerProcess();
            int keyOption = command.indexOf("--key-file");
            command.set(keyOption, "--key-env");
            command.set(keyOption + 1, "VGPU_LEND_KEY");
            command.addAll(List.of("--tracker", tracker.endpoint().toString(), "--lend", "42:0"));
            ProcessBuilder builder = new ProcessBuilder(command)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .redirectError(ProcessBuilder.Redirect.DISCARD);
            builder.environment().put("VGPU_LEND_KEY", lendKey.base64());
            Process worker = builder.start();
            try {
                BufferedReader stdout =
                        new BufferedReader(new InputStreamReader(worker.getInputStream(), StandardCharsets.UTF_8));
                String listening = stdout.readLine();
                assertTrue(listening.startsWith("vgpu-worker listening 127.0.0.1:"), listening);
                int port = Integer.parseInt(listening.substring(listening.lastIndexOf(':') + 1));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (requests.isEmpty() && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                String proof = requests.getFirst().substring(requests.getFirst().lastIndexOf(' ') + 1);
                assertEquals(
                        "42",
                        new TokenVerifier(lendKey, "n2-holder-43", Clock.systemUTC())
                                .verify(proof, 0)
                                .jobId());
                assertThrows(
                        AuthException.class,
                        () -> new TokenVerifier(key, "n2-holder-43", Clock.systemUTC()).verify(proof, 0));

                String otherJobs = new TokenIssuer(key.forLend("43", 0), Clock.systemUTC())
                        .issue("43", 0, "n2-holder-43", Duration.ofMinutes(1));
                VgpuException refused = assertThrows(
                        VgpuException.class,
                        () -> RemoteGpu.connect(
                                group,
                                new WorkerEndpoint("n2-holder-43", "127.0.0.1", port, otherJobs, () -> {}),
                                VaWindow.forVgpu(0),
                                RemoteConfig.defaults(),
                                null));
                assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code());
                assertTrue(refused.getMessage().contains("signature does not match"), refused.getMessage());
                String own = new TokenIssuer(lendKey, Clock.systemUTC())
                        .issue("42", 0, "n2-holder-43", Duration.ofMinutes(1));
                RemoteGpu.connect(
                                group,
                                new WorkerEndpoint("n2-holder-43", "127.0.0.1", port, own, () -> {}),
                                VaWindow.forVgpu(0),
                                RemoteConfig.defaults(),
                                null)
                        .close();
            } finally {
                worker.destroyForcibly();
                worker.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void aKeyIsGivenOneWayAndAnUnsetVariableSaysSo() {
        assertEquals(2, runListeningWith("--key-env", "VGPU_LEND_KEY"));
        assertTrue(err.toString().contains("--key-file or --key-env (one of them)"), err.toString());
        assertEquals(1, runEmulatedWithKey("--key-env", "VGPU_TEST_VARIABLE_NOBODY_SETS"));
        assertTrue(
                err.toString().contains("environment variable VGPU_TEST_VARIABLE_NOBODY_SETS is not set"),
                err.toString());
        assertTrue(stdout().isEmpty());
    }

    /** The command line of a holder's emulated worker process n2-holder-43, before its --tracker and --lend. */
    private List<String> holderWorkerProcess() {
        String java = ProcessHandle.current().info().command().orElseThrow();
        List<String> command = new ArrayList<>(List.of(
                java,
                "--enable-native-access=ALL-UNNAMED",
                "-cp",
                System.getProperty("java.class.path"),
                WorkerCommand.class.getName()));
        command.addAll(List.of(emulatedWorker("n2-holder-43", 30)));
        return command;
    }

    /** An emulated worker on any port of 127.0.0.1 given its key by {@code keyOption keyValue}, run to its end. */
    private int runEmulatedWithKey(String keyOption, String keyValue) {
        return run("--listen", "127.0.0.1:0", "--backend", "emulated", "--worker-id", "w", keyOption, keyValue);
    }

    private static String readAll(InputStream stream) {
        try (stream) {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Test
    void aMissingKeyFileIsAFailureBeforeListening() {
        assertEquals(
                1,
                runEmulatedWithKey("--key-file", directory.resolve("absent.key").toString()));
        assertTrue(err.toString().contains("absent.key does not exist"), err.toString());
        assertFalse(err.toString().contains("CUDA_"), "a missing file is not a GPU error: " + err);
        assertTrue(stdout().isEmpty());
    }
}
