package org.vgpu.runtime.remote.lender;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.runtime.cli.LenderCommand;

/** {@code vgpu lender}: usage errors in process, and a real daemon answering and stopping on SIGTERM. */
@Timeout(60)
class LenderCommandTest {
    private final ChildProcesses children = ChildProcesses.snapshot();

    @TempDir
    Path dir;

    Path keyFile;
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    /** Runs {@code vgpu lender} alone in a process of its own, as the vgpu launcher would. */
    public static final class Main {
        private Main() {}

        public static void main(String[] args) {
            System.exit(SubcommandRunner.run(new LenderCommand(), args, System.out, System.err));
        }
    }

    @BeforeEach
    void writeSiteKey() {
        keyFile = dir.resolve("site.key");
        SiteKey.generate().writeNewFile(keyFile);
    }

    @AfterEach
    void noDaemonOutlivesItsTest() {
        assertEquals(List.of(), children.killLeftovers());
    }

    @Test
    void helpListsTheOptions() {
        assertEquals(0, run("--help"));
        for (String option : List.of(
                "--listen",
                "--devices",
                "--key-file",
                "--pool",
                "--max-lent",
                "--worker-idle-timeout",
                "--worker-startup-timeout",
                "--tls-cert",
                "--tls-key",
                "--backend")) {
            assertTrue(out().contains(option), out());
        }
    }

    @Test
    void requiredOptionsAreNamed() {
        assertEquals(2, run("--devices", "0", "--key-file", keyFile.toString()));
        assertTrue(err().contains("--listen is required"), err());
        assertEquals(2, run("--listen", "127.0.0.1:0", "--key-file", keyFile.toString()));
        assertTrue(err().contains("--devices is required"), err());
        assertEquals(2, run("--listen", "127.0.0.1:0", "--devices", "0"));
        assertTrue(err().contains("--key-file is required"), err());
    }

    @Test
    void valuesThatMakeNoSenseAreUsageErrors() {
        assertUsageError("--listen: expected HOST:PORT, got 'nohost'", "--listen", "nohost");
        assertUsageError("--devices needs numbers separated by commas, e.g. 0,1; got '0,,1'", "--devices", "0,,1");
        assertUsageError("devices must be distinct numbers >= 0, got [1, 1]", "--devices", "1,1");
        assertUsageError("--backend must be one of [native, emulated], got 'auto'", "--backend", "auto");
        assertUsageError("--pool must be >= 0, got -1", "--pool", "-1");
        assertUsageError("warm pool size must be in [0, 16] per device, got 17", "--pool", "17");
        assertUsageError("a warm pool of 2 per device exceeds the 1 lent worker(s) allowed per device", "--pool", "2");
        assertUsageError("--max-lent must be >= 1, got 0", "--max-lent", "0");
        assertUsageError("--worker-idle-timeout must be >= 1, got 0", "--worker-idle-timeout", "0");
        assertUsageError("--tls-cert and --tls-key go together", "--tls-cert", "cert.pem");
    }

    @Test
    void anUnusableKeyFileStopsTheStart() {
        Path absent = dir.resolve("absent.key");
        assertEquals(1, run("--listen", "127.0.0.1:0", "--devices", "0", "--key-file", absent.toString()));
        assertTrue(err().contains("site key file " + absent + " does not exist"), err());
    }

    @Test
    void theDaemonAnswersOnItsSocketAndStopsOnSigterm() throws IOException, InterruptedException {
        List<String> command = List.of(
                ProcessHandle.current().info().command().orElseThrow(),
                "-cp",
                System.getProperty("java.class.path"),
                Main.class.getName(),
                "--listen",
                "127.0.0.1:0",
                "--devices",
                "0,1",
                "--backend",
                "emulated",
                "--pool",
                "0",
                "--key-file",
                keyFile.toString());
        Process daemon = new ProcessBuilder(command)
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        try {
            BufferedReader stdout =
                    new BufferedReader(new InputStreamReader(daemon.getInputStream(), StandardCharsets.UTF_8));
            String ready = stdout.readLine();
            assertTrue(ready != null && ready.startsWith("vgpu lender listening 127.0.0.1:"), String.valueOf(ready));
            try (ControlClient control =
                    new ControlClient(Endpoint.parse(ready.substring("vgpu lender listening ".length())), keyFile)) {
                assertEquals(List.of("ok 0"), control.request("status"));
                assertEquals("error device 2 is not lent by this node (it lends [0, 1])", control.ask("open 2"));
            }

            daemon.destroy();
            assertTrue(daemon.waitFor(20, TimeUnit.SECONDS), "the lender did not stop on SIGTERM");
        } finally {
            daemon.destroyForcibly();
        }
    }

    /** Runs with valid required options, one of them (or an extra option) replaced by {@code option value}. */
    private void assertUsageError(String message, String option, String value) {
        Map<String, String> options = new LinkedHashMap<>(
                Map.of("--listen", "127.0.0.1:0", "--devices", "0", "--key-file", keyFile.toString()));
        options.put(option, value);
        List<String> args = new ArrayList<>();
        options.forEach((name, setting) -> args.addAll(List.of(name, setting)));
        assertEquals(2, run(args.toArray(String[]::new)), err());
        assertTrue(err().contains(message), err());
    }

    private int run(String... args) {
        out.reset();
        err.reset();
        return SubcommandRunner.run(
                new LenderCommand(),
                args,
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String out() {
        return out.toString(StandardCharsets.UTF_8);
    }

    private String err() {
        return err.toString(StandardCharsets.UTF_8);
    }
}
