package org.vgpu.runtime.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.apache.commons.cli.DefaultParser;
import org.apache.commons.cli.ParseException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.workloads.Workloads;

/**
 * {@code vgpu demo} on the CPU emulation. Bad usage is a {@link ParseException}, which the
 * launcher reports with the command's usage and exit status 2.
 */
class DemoCommandTest {
    private final DemoCommand command = new DemoCommand();
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    @Test
    void allWorkloadsPassOnTheEmulationWhichSaysSo() throws ParseException {
        assertEquals(0, run("--backend", "emulated"), output());
        String output = output();
        assertTrue(output.contains("CPU EMULATION, not a GPU"), output);
        List<String> workloadLines = output.lines()
                .filter(line -> line.startsWith("PASS  ") || line.startsWith("FAIL  "))
                .toList();
        assertEquals(Workloads.names().size(), workloadLines.size(), output);
        for (int i = 0; i < workloadLines.size(); i++) {
            String line = workloadLines.get(i);
            assertTrue(line.startsWith("PASS  " + Workloads.names().get(i) + " "), line);
            assertTrue(line.contains(" ms ") && line.contains("[CPU EMULATION, not a GPU]"), line);
        }
        assertTrue(output.contains("PASS: 8 of 8 workloads passed on emulated"), output);
        assertEquals("", err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void workloadsCanBeChosenRepeatedlyOrAsAList() throws ParseException {
        assertEquals(
                0,
                run("--backend", "emulated", "--workload", "saxpy", "--workload", "pointer-chase,transpose"),
                output());
        List<String> ran = output().lines()
                .filter(line -> line.startsWith("PASS  "))
                .map(line -> line.substring(6).split(" ")[0])
                .toList();
        assertEquals(List.of("saxpy", "pointer-chase", "transpose"), ran);
    }

    @Test
    void vgpuAndDeviceChooseTheWindowAndTheDevice() throws ParseException {
        assertEquals(
                0,
                run(
                        "--backend",
                        "emulated",
                        "--vgpu",
                        "5",
                        "--device",
                        "1",
                        "--workload",
                        "vector-add",
                        "--size",
                        "2",
                        "--seed",
                        "9"),
                output());
        assertTrue(output().contains("device 1: vgpu CPU emulation #1"), output());
        assertTrue(output().contains(VaWindow.forVgpu(5) + ", size x2, seed 9"), output());
        assertTrue(output().contains("131072 floats"), output());
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "--backend cuda                  | --backend must be one of",
                "--size 0                        | --size must be >= 1",
                "--size many                     | --size needs an integer",
                "--backend emulated --workload bogus | unknown workload 'bogus'",
                "--backend emulated --workload , | --workload needs a name",
                "--vgpu 256                      | --vgpu must be < 256",
                "--vgpu -1                       | --vgpu must be >= 0",
                "--backend emulated --device 99  | --device 99 does not exist",
                "--seed -5                       | --seed must be >= 0"
            })
    void badValuesAreUsageErrorsThatSayWhatIsWrong(String arguments, String message) {
        ParseException e = assertThrows(ParseException.class, () -> run(arguments.split(" ")));
        assertTrue(e.getMessage().contains(message), e.getMessage());
        assertEquals("", output());
    }

    @Test
    void unknownOptionsAreUsageErrors() {
        assertThrows(ParseException.class, () -> run("--frobnicate"));
    }

    private int run(String... args) throws ParseException {
        return command.run(
                new DefaultParser().parse(command.options(), args),
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    private String output() {
        return out.toString(StandardCharsets.UTF_8);
    }
}
