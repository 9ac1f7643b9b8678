package org.vgpu.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.bench.BenchCommand;

class VgpuTest {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int vgpu(String... args) {
        return Vgpu.standard()
                .run(
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

    @Test
    void withoutArgumentsPrintsTheCommandsAndFails() {
        assertEquals(2, vgpu());
        assertTrue(err().contains("devices") && err().contains("demo") && err().contains("bench"), err());
    }

    @Test
    void helpListsTheCommands() {
        assertEquals(0, vgpu("--help"));
        assertTrue(out().contains("devices"), out());
    }

    @Test
    void versionPrintsTheVersionCommitAndBuildDateOfThisBuild() {
        assertEquals(0, vgpu("--version"));
        assertTrue(
                out().matches("vgpu \\d+\\.\\d+\\.\\d+\\S* \\(commit ([0-9a-f]{40}(-dirty)?|unknown), built "
                        + "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ\\)\\R"),
                out());
        assertEquals("", err());
    }

    /** A word after --version is a mistake (a misplaced command?), not something to drop silently. */
    @Test
    void versionWithAnOperandIsAUsageError() {
        assertEquals(2, vgpu("--version", "tracker"));
        assertEquals("", out());
        assertEquals("vgpu: --version takes nothing, got 'tracker'\nsee `vgpu --help`\n", err());
    }

    @Test
    void everyModulesSubcommandsAreFoundOnTheClassPathInNameOrder() {
        assertEquals(0, vgpu("--help"));
        // the product's modules and, on this test class path only, the benchmarks jar
        List<String> names =
                out().lines().skip(2).map(line -> line.strip().split(" ")[0]).toList();
        assertEquals(
                List.of(
                        "bench",
                        "config",
                        "config-bench",
                        "demo",
                        "devices",
                        "drain",
                        "hook",
                        "lender",
                        "migrate",
                        "migration-bench",
                        "remote-bench",
                        "report",
                        "run",
                        "simulate",
                        "tracker",
                        "worker"),
                names);
    }

    @Test
    void twoSubcommandsOfOneNameAreRefused() {
        IllegalStateException refused = assertThrows(
                IllegalStateException.class, () -> new Vgpu(List.of(new BenchCommand(), new BenchCommand())));
        assertTrue(refused.getMessage().contains("two vgpu subcommands are named 'bench'"), refused.getMessage());
    }

    @Test
    void configCommandIsOffered() {
        assertEquals(0, vgpu("config", "--help"));
        // The usage line wraps before its last words.
        assertTrue(
                out().contains(
                                "usage: vgpu config [options] check [FILE] | render [--what NAME [--node NODE] | --list]\n"),
                out());
        assertTrue(out().contains(" [--slurm-nodes] [FILE]   (FILE: default /etc/vgpu/vgpu.conf)\n"), out());
    }

    @Test
    void runIsOffered() {
        assertEquals(0, vgpu("run", "--help"));
        assertTrue(out().contains("usage: vgpu run [options]") && out().contains("--hold"), out());
    }

    @Test
    void unknownCommandIsAUsageError() {
        assertEquals(2, vgpu("frobnicate"));
        assertEquals("vgpu: unknown command 'frobnicate'\nsee `vgpu --help`\n", err());
    }

    @Test
    void unknownOptionIsAUsageError() {
        assertEquals(2, vgpu("devices", "--colour"));
        assertEquals("vgpu devices: Unrecognized option: --colour\nsee `vgpu devices --help`\n", err());
    }

    /** Every command, not only the one above: its reason in one line and the hint to its --help, never the help. */
    @Test
    void everyCommandAnswersAnUnknownOptionWithOneLineAndItsHelpHint() {
        assertEquals(0, vgpu("--help"));
        List<String> names =
                out().lines().skip(2).map(line -> line.strip().split(" ")[0]).toList();
        assertTrue(names.size() >= 16, out());
        for (String name : names) {
            out.reset();
            err.reset();
            assertEquals(2, vgpu(name, "--no-such-option"), name + ": " + err());
            assertEquals(
                    "vgpu " + name + ": Unrecognized option: --no-such-option\nsee `vgpu " + name + " --help`\n",
                    err());
            assertEquals("", out(), name);
        }
    }

    /**
     * A refusal is a failure a script can see: vgpu drain of a node Slurm does not know, answered as the tracker answers
     * it (slurm-spank-bridge/contract/admin-transcripts.txt), exits 1 with the tracker's reason, not 0.
     */
    @Test
    void aDrainTheTrackerRefusesExitsOneWithItsReason() throws Exception {
        try (ServerSocket tracker = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            CompletableFuture<String> request = CompletableFuture.supplyAsync(() -> {
                try (Socket client = tracker.accept();
                        BufferedReader lines = new BufferedReader(
                                new InputStreamReader(client.getInputStream(), StandardCharsets.UTF_8))) {
                    String line = lines.readLine();
                    client.getOutputStream()
                            .write("error Slurm has no node n9: nothing to drain\n".getBytes(StandardCharsets.UTF_8));
                    return line;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            String address = "127.0.0.1:" + tracker.getLocalPort();
            assertEquals(1, vgpu("drain", "n9", "--tracker", address, "--auth", "none"), err());
            assertEquals("drain n9", request.get(10, TimeUnit.SECONDS));
            assertEquals(
                    "vgpu drain: the tracker at " + address + " refused: Slurm has no node n9: nothing to drain\n",
                    err());
            assertEquals("", out());
        }
    }

    @Test
    void badOptionValueIsAUsageError() {
        assertEquals(2, vgpu("devices", "--backend", "quantum"));
        assertTrue(err().contains("quantum"), err());
    }

    @Test
    void strayArgumentsAreAUsageError() {
        assertEquals(2, vgpu("devices", "extra"));
        assertTrue(err().contains("unexpected argument(s): extra"), err());
    }

    @Test
    void subcommandHelpSucceeds() {
        assertEquals(0, vgpu("devices", "--help"));
        assertTrue(out().contains("--backend"), out());
    }

    @Test
    void devicesListsTheEmulationLabelled() {
        assertEquals(0, vgpu("devices", "--backend", "emulated"));
        assertTrue(out().contains("backend emulated: 4 devices [CPU EMULATION, not a GPU]"), out());
        assertTrue(out().contains("emulated 3: vgpu CPU emulation #3"), out());
    }

    @Test
    void devicesOnAllBackendsSucceedsWithOrWithoutGpu() {
        assertEquals(0, vgpu("devices"));
        assertTrue(out().contains("backend native: "), out());
        assertTrue(out().contains("backend emulated: "), out());
    }

    /**
     * A missing file, an unreachable peer and a bad option are said in vgpu's words: no CUDA error
     * name (none of them is a GPU call) and no Java exception's class or text, with exit status 1
     * for work that failed and 2 for bad usage.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', textBlock = """
            1 | config check /nonexistent/vgpu.conf                                  | /nonexistent/vgpu.conf: no such file
            1 | report --tracker 127.0.0.1:1                                          | connection refused
            1 | migrate --socket /nonexistent/agent.sock --status                     | cannot reach the migration agent
            2 | worker --listen bad --worker-id w --key-file /nonexistent/site.key    | --listen: expected HOST:PORT, got 'bad'
            1 | worker --listen 127.0.0.1:0 --worker-id w --key-file /nonexistent/site.key --backend emulated | /nonexistent/site.key does not exist
            1 | lender --listen 127.0.0.1:0 --devices 0 --key-file /nonexistent/site.key --backend emulated | /nonexistent/site.key does not exist
            2 | worker --listen 127.0.0.1:0 --worker-id w --key-file /nonexistent/site.key --idle-timeout soon | --idle-timeout needs an integer""")
    void failuresOutsideGpuCallsAreSaidInVgpusWords(int status, String commandLine, String expected) {
        assertEquals(status, vgpu(commandLine.split(" ")), err());
        assertTrue(err().contains(expected), err());
        assertFalse(err().contains("CUDA_"), "not a GPU call's failure: " + err());
        assertFalse(err().matches("(?s).*(Exception|Error:|java\\.|netty).*"), "Java exception text: " + err());
    }
}
