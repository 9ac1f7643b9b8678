package org.vgpu.testbed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

import org.vgpu.tracker.slurm.DataParser;
import org.vgpu.tracker.slurm.ScontrolJson;
import org.vgpu.tracker.slurm.SlurmInventory;
import org.vgpu.tracker.slurm.SlurmJob;
import org.vgpu.tracker.slurm.SlurmNode;

/**
 * Brings up the real Slurm testbed (testbed/slurm/up.sh: slurmctld and slurmd -N n1..n3, 4 fake GPUs
 * each, a lender of emulated GPUs per node), runs every scenario against it and tears it down.
 * Skipped, with the reason, where Slurm is not installed or the test does not run as root;
 * .ci/run installs Slurm, so CI runs it.
 */
@Tag("slurm")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SlurmTestbedTest {
    /** Made once the testbed can run here, so a skipped run leaves nothing behind. */
    private static SlurmTestbed testbed;
    /** Why the testbed cannot run here, or null when it can. */
    private static String skipReason;

    @BeforeAll
    static void bringUpTestbed() throws Exception {
        skipReason = SlurmTestbed.reasonItCannotRun();
        if (skipReason != null) {
            // Surefire shows no reason for a skipped class; say it where the build log shows it.
            System.err.println("SlurmTestbedTest skipped: " + skipReason);
            return;
        }
        testbed = SlurmTestbed.fresh("vgpu-testbed-junit", Optional.empty());
        testbed.up();
    }

    @AfterAll
    static void tearDownTestbed() throws Exception {
        if (testbed != null) {
            testbed.close();
        }
    }

    @BeforeEach
    void skipWithoutTestbed() {
        assumeTrue(skipReason == null, skipReason);
    }

    @Test
    @Order(1)
    void gpuJobGetsTwoFakeGpusInCudaVisibleDevices() throws Exception {
        testbed.assertScenarioPasses("gpu-env");
    }

    @Test
    @Order(2)
    void vgpuJobIsHeldUntilRootReleasesIt() throws Exception {
        testbed.assertScenarioPasses("vgpu-held");
    }

    @Test
    @Order(3)
    void badRequestsAreRefusedAtSubmission() throws Exception {
        testbed.assertScenarioPasses("bad-input");
    }

    @Test
    @Order(4)
    void filledClusterShowsOneIdleGpuPerNodeToTheParser() throws Exception {
        Path capture = testbed.dir().resolve("capture-one-idle");
        testbed.assertScenarioPasses("one-idle-gpu-per-node", capture.toString());

        SlurmInventory inventory = inventory(capture);
        assertEquals(inventory, jsonInventory(capture), "scontrol and JSON views differ");
        assertEquals(
                List.of("n1", "n2", "n3"),
                inventory.nodes().stream().map(SlurmNode::name).toList());
        for (SlurmNode node : inventory.nodes()) {
            assertEquals(1, node.idle("gpu"), node.toString());
        }
        List<SlurmJob> held = inventory.jobs().stream()
                .filter(job -> job.held() && job.asksForVgpu())
                .toList();
        assertEquals(1, held.size(), inventory.jobs().toString());
        assertEquals(3, held.getFirst().requestedPerNode().get("vgpu"));
    }

    @Test
    @Order(5)
    void handMadeAssemblyLeavesNoGpuIdleInSlurmsBooks() throws Exception {
        Path capture = testbed.dir().resolve("capture-assembled");
        testbed.assertScenarioPasses("assembly-by-hand", capture.toString());

        SlurmInventory inventory = inventory(capture);
        assertEquals(inventory, jsonInventory(capture), "scontrol and JSON views differ");
        for (SlurmNode node : inventory.nodes()) {
            assertEquals(0, node.idle("gpu"), node.toString());
        }
        SlurmJob assembled = inventory.jobs().stream()
                .filter(job -> job.asksForVgpu() && job.state().equals("RUNNING"))
                .findFirst()
                .orElseThrow();
        assertEquals("n1", assembled.allocations().getFirst().nodes());
        assertEquals(
                2,
                inventory.jobs().stream()
                        .filter(job -> job.partition().equals("vgpu-lend")
                                && job.state().equals("RUNNING"))
                        .count());
    }

    @Test
    @Order(6)
    void anAdminsMoveHomeClaimsAFreedGpuWithAGrantHolderThatTheJobsEndCancels() throws Exception {
        testbed.assertScenarioPasses("hook-grant");
    }

    @Test
    @Order(7)
    void renderWithSlurmNodesTakesEachNodesGpuCountFromTheRunningSlurmAndRefusesABrokenOneInOneLine() throws Exception {
        testbed.assertScenarioPasses("render-slurm-nodes");
    }

    private static SlurmInventory inventory(Path capture) throws IOException {
        return SlurmInventory.fromScontrol(
                Files.readString(capture.resolve("scontrol-show-node-d.txt")),
                Files.readString(capture.resolve("scontrol-show-job-d.txt")));
    }

    /**
     * Slurm's JSON of the same moment: {@code scontrol --json show node/job -d} (data_parser v0.0.42, the default of
     * 24.11) where the Slurm has it, else 22.05's {@code sinfo --json} and {@code squeue --json}.
     */
    private static SlurmInventory jsonInventory(Path capture) throws IOException {
        Path scontrolNodes = capture.resolve("scontrol-show-node-d.json");
        if (Files.exists(scontrolNodes)) {
            ScontrolJson reader = new ScontrolJson(DataParser.V0_0_42);
            return new SlurmInventory(
                    reader.nodes(Files.readString(scontrolNodes)),
                    reader.jobs(Files.readString(capture.resolve("scontrol-show-job-d.json"))));
        }
        return SlurmInventory.fromJson(
                Files.readString(capture.resolve("sinfo.json")), Files.readString(capture.resolve("squeue.json")));
    }
}
