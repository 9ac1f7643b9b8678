package org.vgpu.testbed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.vgpu.siteconfig.slurm.SlurmInventory;
import org.vgpu.siteconfig.slurm.SlurmJob;
import org.vgpu.siteconfig.slurm.SlurmNode;

/**
 * Brings up the real Slurm testbed (testbed/slurm/up.sh: slurmctld and slurmd -N n1..n3, 4 fake GPUs
 * each), runs every scenario against it and tears it down. Skipped, with the reason, where Slurm is
 * not installed or the test does not run as root; .ci/run installs Slurm, so CI runs it.
 */
@Tag("slurm")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SlurmTestbedTest {
    private static final Path SCRIPTS = Path.of("slurm").toAbsolutePath();
    private static final Path LAUNCHER_JAR = Path.of("..", "job-wrapper", "target", "vgpu.jar").toAbsolutePath().normalize();
    /** Apart from a testbed someone runs by hand (/tmp/vgpu-testbed, ports from 17900). */
    private static final Path TESTBED_DIR = Path.of("/tmp/vgpu-testbed-junit");
    private static final String PORT_BASE = "17940";
    private static final long SCRIPT_TIMEOUT_SECONDS = 240;

    /** A finished script: its exit status and everything it printed. */
    private record Outcome(int status, String output) {
    }

    /** Why the testbed cannot run here, or null when it can. */
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = reasonTheTestbedCannotRun();
        if (skipReason != null) {
            // Surefire shows no reason for a skipped class; say it where the build log shows it.
            System.err.println("SlurmTestbedTest skipped: " + skipReason);
            return;
        }
        run("down.sh");
        Outcome up = run("up.sh");
        assertEquals(0, up.status(), "up.sh failed:\n" + up.output());
    }

    @BeforeEach
    void skipWithoutTestbed() {
        assumeTrue(skipReason == null, skipReason);
    }

    private static String reasonTheTestbedCannotRun() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "the Slurm testbed runs slurmctld/slurmd and creates device files, which needs root";
        }
        if (!(onPath("slurmctld") && onPath("slurmd") && onPath("sbatch"))) {
            return "Slurm is not installed (testbed/slurm/install-slurm.sh installs it; .ci/run does)";
        }
        if (!Files.isRegularFile(LAUNCHER_JAR)) {
            return "the vgpu launcher " + LAUNCHER_JAR + " is not built (mvn package)";
        }
        return null;
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (skipReason == null && Files.exists(TESTBED_DIR)) {
            Outcome down = run("down.sh");
            assertEquals(0, down.status(), "down.sh failed:\n" + down.output());
        }
    }

    @Test
    @Order(1)
    void gpuJobGetsTwoFakeGpusInCudaVisibleDevices() throws Exception {
        assertScenarioPasses("gpu-env");
    }

    @Test
    @Order(2)
    void vgpuJobIsHeldUntilRootReleasesIt() throws Exception {
        assertScenarioPasses("vgpu-held");
    }

    @Test
    @Order(3)
    void badRequestsAreRefusedAtSubmission() throws Exception {
        assertScenarioPasses("bad-input");
    }

    @Test
    @Order(4)
    void filledClusterShowsOneIdleGpuPerNodeToTheParser() throws Exception {
        Path capture = TESTBED_DIR.resolve("capture-one-idle");
        assertScenarioPasses("one-idle-gpu-per-node", capture.toString());

        SlurmInventory inventory = inventory(capture);
        assertEquals(inventory, jsonInventory(capture), "scontrol and JSON views differ");
        assertEquals(List.of("n1", "n2", "n3"), inventory.nodes().stream().map(SlurmNode::name).toList());
        for (SlurmNode node : inventory.nodes()) {
            assertEquals(1, node.idle("gpu"), node.toString());
        }
        List<SlurmJob> held = inventory.jobs().stream().filter(job -> job.held() && job.asksForVgpu()).toList();
        assertEquals(1, held.size(), inventory.jobs().toString());
        assertEquals(3, held.getFirst().requestedPerNode().get("vgpu"));
    }

    @Test
    @Order(5)
    void handMadeAssemblyLeavesNoGpuIdleInSlurmsBooks() throws Exception {
        Path capture = TESTBED_DIR.resolve("capture-assembled");
        assertScenarioPasses("assembly-by-hand", capture.toString());

        SlurmInventory inventory = inventory(capture);
        assertEquals(inventory, jsonInventory(capture), "scontrol and JSON views differ");
        for (SlurmNode node : inventory.nodes()) {
            assertEquals(0, node.idle("gpu"), node.toString());
        }
        SlurmJob assembled = inventory.jobs().stream()
                .filter(job -> job.asksForVgpu() && job.state().equals("RUNNING")).findFirst().orElseThrow();
        assertEquals("n1", assembled.allocations().getFirst().nodes());
        assertEquals(2, inventory.jobs().stream()
                .filter(job -> job.partition().equals("vgpu-lend") && job.state().equals("RUNNING")).count());
    }

    private static SlurmInventory inventory(Path capture) throws IOException {
        return SlurmInventory.fromScontrol(Files.readString(capture.resolve("scontrol-show-node-d.txt")),
                Files.readString(capture.resolve("scontrol-show-job-d.txt")));
    }

    private static SlurmInventory jsonInventory(Path capture) throws IOException {
        return SlurmInventory.fromJson(Files.readString(capture.resolve("sinfo.json")),
                Files.readString(capture.resolve("squeue.json")));
    }

    private static void assertScenarioPasses(String scenario, String... args) throws Exception {
        Outcome outcome = run("scenario-" + scenario + ".sh", args);
        assertEquals(0, outcome.status(), "scenario " + scenario + " failed:\n" + outcome.output());
        assertTrue(outcome.output().contains("PASS " + scenario), outcome.output());
        System.out.print(outcome.output());
    }

    private static Outcome run(String script, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(SCRIPTS.resolve(script).toString()));
        command.addAll(Arrays.asList(args));
        // Output goes to a file, not a pipe: daemons that up.sh starts inherit it and would hold a pipe open.
        Path log = Files.createTempFile("vgpu-testbed-" + script, ".log");
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            builder.environment().put("VGPU_TESTBED_DIR", TESTBED_DIR.toString());
            builder.environment().put("VGPU_TESTBED_PORT_BASE", PORT_BASE);
            // The launcher runs on the Java running this test, which is the build's Java 25.
            builder.environment().put("JAVA_HOME", System.getProperty("java.home"));
            Process process = builder.start();
            if (!process.waitFor(SCRIPT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(script + " ran longer than " + SCRIPT_TIMEOUT_SECONDS + " s:\n" + Files.readString(log));
            }
            return new Outcome(process.exitValue(), Files.readString(log));
        } finally {
            Files.delete(log);
        }
    }

    private static boolean onPath(String command) {
        return Arrays.stream(System.getenv().getOrDefault("PATH", "").split(File.pathSeparator))
                .anyMatch(dir -> Files.isExecutable(Path.of(dir, command)));
    }
}
