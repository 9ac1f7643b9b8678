package org.vgpu.runtime.remote.lender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.runtime.remote.security.TlsConfig;

/** {@link WorkerLauncher} with {@link FakeWorker} processes: start-up, draining, failures and stopping. */
@Timeout(60)
class WorkerLauncherTest {
    private static final Endpoint LOOPBACK_ANY_PORT = new Endpoint("127.0.0.1", 0);

    private final ChildProcesses children = ChildProcesses.snapshot();

    @TempDir
    Path dir;

    Path keyFile;
    final WorkerLauncher launcher = new WorkerLauncher(FakeWorker.class.getName(), Duration.ofSeconds(30));

    @BeforeEach
    void writeSiteKey() {
        keyFile = dir.resolve("site.key");
        SiteKey.generate().writeNewFile(keyFile);
    }

    @AfterEach
    void noWorkerOutlivesItsTest() {
        assertEquals(List.of(), children.killLeftovers());
    }

    @Test
    void aLaunchedWorkerListensServesOneSessionAndReportsWhatItServed() throws Exception {
        try (LaunchedWorker worker = launcher.launch(spec("node1-d0-0001"))) {
            assertEquals("127.0.0.1", worker.endpoint().host());
            assertTrue(worker.endpoint().port() > 0, worker.endpoint().toString());
            assertTrue(worker.process().isAlive());
            assertEquals(Optional.empty(), worker.servedSummary());

            assertEquals("hello", echo(worker.endpoint(), "hello"));

            worker.onExit().get(20, TimeUnit.SECONDS);
            assertEquals(0, worker.process().exitValue());
            assertEquals(
                    Optional.of("vgpu-worker served calls=1 bytes_in=5 bytes_out=5 busy_ms=0"), worker.servedSummary());
        }
    }

    @Test
    void theCommandIsThisJvmsJavaAndClassPathWithTheWorkerContract() throws Exception {
        WorkerSpec spec = new WorkerSpec(
                LOOPBACK_ANY_PORT,
                "emulated",
                3,
                "node1-d3-0002",
                keyFile,
                Optional.of(new TlsConfig.Server(dir.resolve("c.pem"), dir.resolve("k.pem"))),
                Optional.of(Duration.ofSeconds(90)));
        List<String> command = new WorkerLauncher().command(spec);

        assertEquals(ProcessHandle.current().info().command().orElseThrow(), command.get(0));
        assertEquals(
                List.of(
                        "--enable-native-access=ALL-UNNAMED",
                        "-cp",
                        System.getProperty("java.class.path"),
                        WorkerLauncher.WORKER_MAIN_CLASS,
                        "--listen",
                        "127.0.0.1:0",
                        "--backend",
                        "emulated",
                        "--device",
                        "3",
                        "--worker-id",
                        "node1-d3-0002",
                        "--key-file",
                        keyFile.toString(),
                        "--tls-cert",
                        dir.resolve("c.pem").toString(),
                        "--tls-key",
                        dir.resolve("k.pem").toString(),
                        "--idle-timeout",
                        "90"),
                command.subList(1, command.size()));
    }

    @Test
    void theWorkerReceivesExactlyThoseOptions() throws Exception {
        WorkerSpec spec = new WorkerSpec(
                LOOPBACK_ANY_PORT,
                "native",
                1,
                "node1-d1-0003",
                keyFile,
                Optional.empty(),
                Optional.of(Duration.ofSeconds(1)));
        try (LaunchedWorker worker = launcher.launch(spec)) {
            worker.onExit().get(20, TimeUnit.SECONDS);
            String stderr = worker.stderrTail();
            assertTrue(stderr.contains("fake worker jvm --enable-native-access=ALL-UNNAMED"), stderr);
            assertTrue(stderr.contains("fake worker args " + String.join(" ", spec.arguments())), stderr);
            assertTrue(stderr.contains("no client within 1 s"), stderr);
            assertEquals(
                    Optional.of("vgpu-worker served calls=0 bytes_in=0 bytes_out=0 busy_ms=0"), worker.servedSummary());
        }
    }

    @Test
    void aWorkerThatExitsBeforeListeningIsReportedWithItsStatusAndStderr() {
        LendingException failed = assertThrows(LendingException.class, () -> launcher.launch(spec("crash-0004")));
        assertEquals(LendingException.Code.WORKER_NOT_STARTED, failed.code());
        assertTrue(
                failed.getMessage()
                        .contains("GPU worker crash-0004 on device 0 closed its output without reporting"
                                + " listening (exit status 3)"),
                failed.getMessage());
        assertTrue(failed.getMessage().contains("fake worker crash-0004: no GPU here"), failed.getMessage());
    }

    @Test
    void aWorkerRefusingItsKeyFileSaysWhy() throws IOException {
        Files.setPosixFilePermissions(keyFile, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        LendingException failed = assertThrows(LendingException.class, () -> launcher.launch(spec("node1-d0-0005")));
        assertTrue(failed.getMessage().contains("(exit status 1)"), failed.getMessage());
        assertTrue(failed.getMessage().contains("chmod 600 " + keyFile), failed.getMessage());
    }

    @Test
    void aWorkerThatNeverReportsListeningIsKilledAtTheTimeout() {
        WorkerLauncher impatient = new WorkerLauncher(FakeWorker.class.getName(), Duration.ofSeconds(3));
        LendingException failed = assertThrows(LendingException.class, () -> impatient.launch(spec("silent-0006")));
        assertEquals(LendingException.Code.WORKER_NOT_STARTED, failed.code());
        assertTrue(failed.getMessage().contains("did not report listening within 3 s"), failed.getMessage());
        assertTrue(failed.getMessage().contains("fake worker args"), failed.getMessage());
    }

    @Test
    void aBadListeningLineFailsTheLaunch() {
        LendingException failed = assertThrows(LendingException.class, () -> launcher.launch(spec("badline-0007")));
        assertTrue(
                failed.getMessage().contains("reported a bad endpoint: expected HOST:PORT, got 'nowhere'"),
                failed.getMessage());
    }

    @Test
    void aMissingMainClassFailsTheLaunchWithTheJvmsReason() {
        WorkerLauncher wrong = new WorkerLauncher("org.vgpu.NoSuchWorker", Duration.ofSeconds(30));
        LendingException failed = assertThrows(LendingException.class, () -> wrong.launch(spec("node1-d0-0008")));
        assertTrue(failed.getMessage().contains("org.vgpu.NoSuchWorker"), failed.getMessage());
        assertTrue(failed.getMessage().contains("(exit status 1)"), failed.getMessage());
    }

    @Test
    void aWorkerFloodingItsPipesStillStartsAndKeepsOnlyATail() throws Exception {
        try (LaunchedWorker worker = launcher.launch(spec("chatty-0009"))) {
            assertEquals("chatty", echo(worker.endpoint(), "chatty"));
            worker.onExit().get(20, TimeUnit.SECONDS);
            List<String> tail = worker.stderrTail().lines().toList();
            assertEquals(20, tail.size());
            assertEquals("chatter on stderr 19999", tail.getLast());
            assertTrue(worker.servedSummary().isPresent());
        }
    }

    @Test
    void closingAnIdleWorkerStopsItWithoutASummary() throws Exception {
        LaunchedWorker worker = launcher.launch(spec("node1-d0-0010"));
        worker.close();
        assertFalse(worker.process().isAlive());
        assertTrue(worker.onExit().isDone());
        assertEquals(Optional.empty(), worker.servedSummary());
        worker.close();
    }

    @Test
    void aWorkerIgnoringSigtermIsKilled() throws Exception {
        LaunchedWorker worker = launcher.launch(spec("stubborn-0011"));
        worker.close();
        assertFalse(worker.process().isAlive());
        assertEquals(137, worker.process().exitValue());
    }

    private WorkerSpec spec(String workerId) {
        return new WorkerSpec(LOOPBACK_ANY_PORT, "emulated", 0, workerId, keyFile);
    }

    /** Sends {@code text} to the worker's session, half-closes and returns what came back. */
    static String echo(Endpoint endpoint, String text) throws IOException {
        try (Socket socket = new Socket(endpoint.host(), endpoint.port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(text.getBytes(StandardCharsets.US_ASCII));
            socket.shutdownOutput();
            InputStream in = socket.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        }
    }
}
