package org.vgpu.simulator.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.cli.SubcommandRunner;

class SimulateCommandTest {
    @TempDir
    Path dir;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();

    private int simulate(String... args) {
        return SubcommandRunner.run(
                new SimulateCommand(),
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

    private static String sacct() throws URISyntaxException {
        return Path.of(SimulateCommandTest.class
                        .getResource("/sacct/testbed-22.05.txt")
                        .toURI())
                .toString();
    }

    @Test
    void aRealSacctHistoryIsComparedUnderEveryPolicy() throws Exception {
        Path plot = dir.resolve("waits.png");
        assertEquals(0, simulate("--sacct", sacct(), "--cluster", "3x4x8", "--plot", plot.toString()), err());
        assertTrue(out().contains("kept 17 jobs"), out());
        assertTrue(out().contains("offered load: the jobs ask "), out());
        assertTrue(out().lines().anyMatch(line -> line.matches(" +slurm +borrow +vgpu +vgpu-free")), out());
        assertTrue(out().contains("mean wait"), out());
        assertTrue(Files.size(plot) > 0);
    }

    @Test
    void jsonGoesToStandardOutputAndTheSummaryToStandardError() throws Exception {
        assertEquals(
                0,
                simulate(
                        "--generate",
                        "medium",
                        "--cluster",
                        "4x4",
                        "--jobs",
                        "200",
                        "--format",
                        "json",
                        "--policies",
                        "slurm,vgpu"),
                err());
        JsonNode document = new ObjectMapper().readTree(out());
        assertEquals(
                "generated medium mix, 200 jobs, seed 1", document.get("source").asText());
        assertEquals(List.of("slurm", "vgpu"), document.get("policies").findValuesAsText("policy"));
        assertTrue(err().contains("generated 200 jobs offering 75 % of 16 GPUs"), err());
    }

    @Test
    void badUsageIsExitStatusTwoWithTheReason() {
        assertEquals(2, simulate("--cluster", "4x4"));
        assertTrue(
                err().startsWith("vgpu simulate: no input given; give one of --alibaba DIR, --sacct FILE, --swf FILE"
                        + " or --generate LEVEL\n"),
                err());
        assertUsage(
                "more than one input given (--sacct, --generate)",
                "--sacct",
                "x",
                "--generate",
                "light",
                "--cluster",
                "4x4");
        assertUsage("--sacct needs --cluster SPEC", "--sacct", "x");
        assertUsage("--cluster: '4 by 4' is not a node group", "--swf", "x", "--cluster", "4 by 4");
        assertUsage("--cluster does not go with --alibaba", "--alibaba", "x", "--cluster", "4x4");
        assertUsage("--jobs goes with --generate, not with --sacct", "--sacct", "x", "--cluster", "4x4", "--jobs", "9");
        assertUsage(
                "--generate must be one of [light, medium, heavy], got 'extreme'",
                "--generate",
                "extreme",
                "--cluster",
                "4x4");
        assertUsage("--jobs must be >= 1, got 0", "--generate", "light", "--cluster", "4x4", "--jobs", "0");
        assertUsage(
                "--overhead: unknown overhead parameter 'speed'",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--overhead",
                "speed=2");
        assertUsage(
                "--overhead: overhead parameter hook-latency-seconds: -1 is out of range",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--overhead",
                "hook-latency-seconds=-1");
        assertUsage(
                "--overhead takes KEY=VALUE, got '3'", "--generate", "light", "--cluster", "4x4", "--overhead", "3");
        assertUsage(
                "--policies takes a comma-separated list of [slurm, borrow, vgpu, vgpu-free], got 'fifo'",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--policies",
                "fifo");
        assertUsage(
                "--format must be one of [table, json, csv], got 'xml'",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--format",
                "xml");
        assertUsage(
                "--plot draws a PNG: give a FILE ending in .png, got 'waits.svg'",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--plot",
                "waits.svg");
    }

    @Test
    void backfillAndComparisonOptionsRefuseWhatDoesNotGoTogether() {
        assertUsage(
                "--compare-recorded needs an input that recorded when its jobs started",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--compare-recorded");
        assertUsage(
                "--compare-recorded compares the recorded starts with policy slurm: add slurm to --policies",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--policies",
                "vgpu",
                "--compare-recorded");
        assertUsage("--per-job goes with --compare-recorded", "--sacct", "x", "--cluster", "4x4", "--per-job");
        assertUsage(
                "--compare-with goes with --compare-recorded",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--compare-with",
                "borrow");
        assertUsage(
                "--compare-recorded compares the recorded starts with policy borrow: add borrow to --policies",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--policies",
                "slurm",
                "--compare-recorded",
                "--compare-with",
                "borrow");
        assertUsage(
                "--borrowers goes with --sacct, not with --generate",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--borrowers",
                "vgpu-jobs");
        assertUsage(
                "--tracker-poll needs seconds > 0, got 0.0",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--tracker-poll",
                "0");
        assertUsage(
                "--site-config: ",
                "--generate",
                "light",
                "--cluster",
                "4x4",
                "--site-config",
                dir.resolve("no-such.conf").toString());
        assertUsage(
                "--backfill-phase goes with --backfill-interval",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--backfill-phase",
                "3");
        assertUsage(
                "--backfill-interval needs a number of seconds, got 'often'",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--backfill-interval",
                "often");
        assertUsage(
                "--backfill-interval needs seconds >= 0, got -30.0",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--backfill-interval",
                "-30");
        assertUsage(
                "--backfill-reserves must be one of [first, all], got 'some'",
                "--sacct",
                "x",
                "--cluster",
                "4x4",
                "--backfill-reserves",
                "some");
    }

    @Test
    void recordedStartsAreSetAgainstTheSimulatedSlurmJobByJob() throws Exception {
        assertEquals(
                0,
                simulate(
                        "--sacct",
                        sacct(),
                        "--cluster",
                        "3x4x8",
                        "--policies",
                        "slurm",
                        "--compare-recorded",
                        "--per-job"),
                err());
        String text = out();
        assertTrue(text.contains("recorded against simulated (Slurm alone), 17 jobs with a recorded start:"), text);
        assertTrue(text.lines().anyMatch(line -> line.matches("  recorded +\\d+ s +\\d+ s +\\d+ s")), text);
        assertTrue(text.lines().anyMatch(line -> line.matches("  simulated +\\d+ s +\\d+ s +\\d+ s")), text);
        assertEquals(17, perJobLines(text).size(), text);
    }

    /**
     * A workload the real Slurm ran (scenario simulator-agrees: 20 sleep jobs on the testbed's 3 nodes of 4 GPUs,
     * 6 of them started by backfill): simulated with Slurm's backfill cadence, the cycle slurmctld logged and a
     * reservation for every job, at least half the jobs start within 5 s of when Slurm started them and the mean
     * difference is under half a backfill cycle; backfilling at every pass instead misses by more than twice that.
     */
    @Test
    void slurmsBackfillCadenceBringsTheSimulationToTheRealStarts() throws Exception {
        String workload = Path.of(SimulateCommandTest.class
                        .getResource("/sacct/testbed-22.05-workload.txt")
                        .toURI())
                .toString();
        double[] withCadence = perJobDifferences(
                workload, "--backfill-interval", "30", "--backfill-phase", "1.082", "--backfill-reserves", "all");
        double[] everyPass = perJobDifferences(workload);
        assertEquals(20, withCadence.length);
        assertTrue(
                Arrays.stream(withCadence).filter(d -> Math.abs(d) <= 5).count() >= 10, Arrays.toString(withCadence));
        assertTrue(meanAbsolute(withCadence) <= 15, Arrays.toString(withCadence));
        assertTrue(meanAbsolute(everyPass) > 2 * meanAbsolute(withCadence), Arrays.toString(everyPass));
    }

    /**
     * A workload with borrowing that the tracker ran on the real Slurm (scenario simulator-agrees-borrowing: 14 sleep
     * jobs, 3 asking vgpu, 2 of which borrowed through 3 holders): simulated under policy borrow with the testbed's
     * [policy], --poll 1 and the start-up measured from the same sacct record (16.5 s), every job borrows as many GPUs
     * as it did and starts within 5 s plus the start-ups' spread (3 s) of when it did.
     */
    @Test
    void theSimulatedTrackerBorrowsAsTheRealOneDidOnTheTestbed() throws Exception {
        String workload = resourcePath("/sacct/testbed-22.05-borrowing.txt");
        out.reset();
        assertEquals(
                0,
                simulate(
                        "--sacct",
                        workload,
                        "--cluster",
                        "3x4x4",
                        "--policies",
                        "slurm,borrow",
                        "--borrowers",
                        "vgpu-jobs",
                        "--site-config",
                        resourcePath("/sacct/testbed-vgpu.conf"),
                        "--tracker-poll",
                        "1",
                        "--overhead",
                        "startup-seconds=16.5",
                        "--overhead",
                        "slowdown.unknown=1",
                        "--compare-recorded",
                        "--compare-with",
                        "borrow",
                        "--per-job"),
                err());
        String text = out();
        assertTrue(text.contains("passed over 3 holder jobs of 2 vgpu jobs"), text);
        assertTrue(text.contains("recorded against simulated (policy borrow), 14 jobs with a recorded start:"), text);
        List<String[]> jobs = text.lines()
                .filter(line -> line.matches("  \\d+ +\\d+ +\\d+ +[0-9.]+ +[-+][0-9.]+ +\\d+"))
                .map(line -> line.strip().split(" +"))
                .toList();
        assertEquals(14, jobs.size(), text);
        Map<String, Integer> borrowed = new HashMap<>();
        for (String[] job : jobs) {
            assertTrue(Math.abs(Double.parseDouble(job[4])) <= 8, String.join(" ", job));
            borrowed.put(job[0], Integer.parseInt(job[5]));
        }
        assertEquals(2, borrowed.get("22"), "the vgpu:4 job on n2's 2 GPUs and one each of n1 and n3");
        assertEquals(1, borrowed.get("31"), "the vgpu:3 job on n2's 2 GPUs and one of n3");
        assertEquals(3, borrowed.values().stream().mapToInt(Integer::intValue).sum(), text);
    }

    private static String resourcePath(String name) throws URISyntaxException {
        return Path.of(SimulateCommandTest.class.getResource(name).toURI()).toString();
    }

    /** The simulated minus the recorded start of each job of {@code sacct} on the testbed's nodes, Slurm alone. */
    private double[] perJobDifferences(String sacct, String... backfill) {
        List<String> args = new ArrayList<>(List.of(
                "--sacct", sacct, "--cluster", "3x4x4", "--policies", "slurm", "--compare-recorded", "--per-job"));
        args.addAll(List.of(backfill));
        out.reset();
        assertEquals(0, simulate(args.toArray(String[]::new)), err());
        return differences(out());
    }

    private static List<String> perJobLines(String text) {
        return text.lines()
                .filter(line -> line.matches("  \\d+ +\\d+ +\\d+ +[0-9.]+ +[-+][0-9.]+"))
                .toList();
    }

    private static double[] differences(String text) {
        return perJobLines(text).stream()
                .mapToDouble(line -> Double.parseDouble(line.strip().split(" +")[4]))
                .toArray();
    }

    private static double meanAbsolute(double[] values) {
        return Arrays.stream(values).map(Math::abs).average().orElseThrow();
    }

    private void assertUsage(String reason, String... args) {
        err.reset();
        assertEquals(2, simulate(args), err());
        assertTrue(err().startsWith("vgpu simulate: " + reason), err());
        assertTrue(err().endsWith("see `vgpu simulate --help`\n"), err());
    }

    @Test
    void anUnreadableOrMalformedInputIsExitStatusOneWithEveryProblem() throws Exception {
        Path missing = dir.resolve("missing.txt");
        assertEquals(1, simulate("--sacct", missing.toString(), "--cluster", "4x4"));
        assertTrue(err().startsWith("vgpu simulate: cannot read the --sacct input " + missing + ": "), err());

        Path truncated = dir.resolve("truncated.txt");
        List<String> lines = Files.readAllLines(Path.of(sacct()));
        // job 1's line cut short, and job 2's start garbled
        Files.write(
                truncated,
                List.of(
                        lines.get(0),
                        lines.get(1).substring(0, 30),
                        lines.get(3).replace("2026-11-30T02:30:06", "yesterday")));
        err.reset();
        assertEquals(1, simulate("--sacct", truncated.toString(), "--cluster", "3x4"));
        assertEquals(
                List.of(
                        "vgpu simulate: " + truncated + ":2: 4 fields; expected 10 separated by |, as the header line"
                                + " names (a line cut short, or a field holding a |)",
                        "vgpu simulate: " + truncated + ":3: Start 'yesterday' is no time stamp; expected a Slurm"
                                + " time stamp YYYY-MM-DDTHH:MM:SS, Unknown or None"),
                err().lines().toList());
        assertEquals("", out());

        Path swf = dir.resolve("short.swf");
        Files.writeString(swf, "1 0 0 60 4\n");
        err.reset();
        assertEquals(1, simulate("--swf", swf.toString(), "--cluster", "4x4"));
        assertTrue(err().startsWith("vgpu simulate: " + swf + ":1: 5 fields; expected the 18"), err());
    }
}
