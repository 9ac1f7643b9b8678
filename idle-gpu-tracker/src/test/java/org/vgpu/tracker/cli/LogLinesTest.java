package org.vgpu.tracker.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import org.vgpu.common.cli.LogSettings;

/** The log lines of a vgpu command, in a JVM of their own as the launcher's: daemons' dated, a user program's quiet. */
class LogLinesTest {
    /** A command's JVM: the settings the launcher applies, then one INFO and one WARN line. */
    public static void main(String[] args) {
        LogSettings.forCommand(args[0]);
        LoggerFactory.getLogger("org.vgpu.probe").info("an info line");
        LoggerFactory.getLogger("org.vgpu.probe").warn("a warning");
    }

    private static List<String> stderrOf(String command) throws Exception {
        Process process = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        LogLinesTest.class.getName(),
                        command)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .start();
        String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, process.exitValue(), err);
        return err.lines().filter(line -> line.contains("org.vgpu.probe")).toList();
    }

    @Test
    void aDaemonsLinesCarryTheirDateAndTime() throws Exception {
        List<String> lines = stderrOf("tracker");
        assertEquals(2, lines.size(), lines.toString());
        for (String line : lines) {
            assertTrue(
                    line.matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) .*"), line);
        }
    }

    @Test
    void vgpuRunAndItsProgramGetWarningsOnly() throws Exception {
        List<String> lines = stderrOf("run");
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.getFirst().endsWith("a warning"), lines.getFirst());
    }

    /** Its stdout is a file to install, its stderr the verdict: a reader's INFO line (Slurm's version) is noise. */
    @Test
    void vgpuConfigGetsWarningsOnly() throws Exception {
        List<String> lines = stderrOf("config");
        assertEquals(1, lines.size(), lines.toString());
        assertTrue(lines.getFirst().endsWith("a warning"), lines.getFirst());
    }
}
