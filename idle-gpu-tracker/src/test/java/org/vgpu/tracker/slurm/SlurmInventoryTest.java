package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * On output captured from the real Slurm 22.05 testbed (testbed/slurm/scenario-one-idle-gpu-per-node.sh
 * and scenario-assembly-by-hand.sh): 3 nodes with gpu:4,vgpu:8 each. The same scenarios' capture from the
 * testbed on Slurm 24.11 (VGPU_TESTBED_SLURM=24.11) lies under slurm-24.11/, and the text view reads the same
 * cluster from it.
 */
class SlurmInventoryTest {
    /** Where the captures of Slurm 24.11 lie, beside 22.05's. */
    private static final String SLURM_24_11 = "slurm-24.11/";

    static String capture(String state, String file) {
        try (InputStream in = SlurmInventoryTest.class.getResourceAsStream(state + "/" + file)) {
            if (in == null) {
                throw new IllegalStateException("no captured " + state + "/" + file);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static SlurmInventory scontrolView(String state) {
        return SlurmInventory.fromScontrol(
                capture(state, "scontrol-show-node-d.txt"), capture(state, "scontrol-show-job-d.txt"));
    }

    private static SlurmInventory jsonView(String state) {
        return SlurmInventory.fromJson(capture(state, "sinfo.json"), capture(state, "squeue.json"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"one-idle", "assembled"})
    void scontrolAndJsonViewsAgree(String state) {
        assertEquals(scontrolView(state), jsonView(state));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", SLURM_24_11})
    void filledNodesHaveOneIdleGpuEach(String slurm) {
        SlurmInventory inventory = scontrolView(slurm + "one-idle");

        assertEquals(
                List.of("n1", "n2", "n3"),
                inventory.nodes().stream().map(SlurmNode::name).toList());
        for (SlurmNode node : inventory.nodes()) {
            assertEquals(Map.of("gpu", 4, "vgpu", 8), node.configured());
            assertEquals(1, node.idle("gpu"), node.toString());
            assertEquals(8, node.idle("vgpu"));
            assertEquals(8, node.cpus());
            assertEquals(5, node.idleCpus(), "the fill job takes 3: 1 is left to user jobs, 4 are kept for holders");
            assertEquals("MIXED", node.state());
            assertTrue(node.schedulable());
            assertEquals(List.of("gpu", "vgpu-lend"), node.partitions());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"", SLURM_24_11})
    void heldVgpuJobIsRecognized(String slurm) {
        SlurmJob held = scontrolView(slurm + "one-idle").jobs().stream()
                .filter(job -> job.name().equals("wants-3-vgpus"))
                .findFirst()
                .orElseThrow();

        assertTrue(held.held());
        assertTrue(held.asksForVgpu());
        assertEquals(Map.of("vgpu", 3), held.requestedPerNode());
        assertEquals("JobHeldUser", held.reason());
        assertEquals("root", held.user());
        assertEquals("gpu", held.partition());
        assertEquals(List.of(), held.allocations());
    }

    @ParameterizedTest
    @ValueSource(strings = {"", SLURM_24_11})
    void fillJobsHoldThreeGpuIndicesEach(String slurm) {
        SlurmInventory inventory = scontrolView(slurm + "one-idle");

        for (String node : List.of("n1", "n2", "n3")) {
            SlurmJob fill = inventory.jobs().stream()
                    .filter(job ->
                            job.name().equals("fill-" + node) && job.state().equals("RUNNING"))
                    .findFirst()
                    .orElseThrow();
            assertEquals(
                    List.of(new SlurmJob.NodeAllocation(
                            node, List.of(new GresItem("gpu", Optional.empty(), 3, List.of(0, 1, 2))))),
                    fill.allocations());
            assertFalse(fill.asksForVgpu());
            assertFalse(fill.held());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"", SLURM_24_11})
    void assembledJobHoldsItsLocalGpuAndHoldersTheBorrowedOnes(String slurm) {
        SlurmInventory inventory = scontrolView(slurm + "assembled");
        SlurmJob assembled = inventory.jobs().stream()
                .filter(job -> job.name().equals("assembled-3-vgpus"))
                .findFirst()
                .orElseThrow();

        assertEquals("RUNNING", assembled.state());
        assertEquals(Map.of("gpu", 1, "vgpu", 3), assembled.requestedPerNode());
        // One allocation on n1; 22.05 lists its vgpu entry first, 24.11 its gpu entry.
        assertEquals(1, assembled.allocations().size(), assembled.toString());
        assertEquals("n1", assembled.allocations().getFirst().nodes());
        assertEquals(
                Set.of(
                        new GresItem("vgpu", Optional.empty(), 3, List.of()),
                        new GresItem("gpu", Optional.empty(), 1, List.of(3))),
                Set.copyOf(assembled.allocations().getFirst().gres()));

        List<SlurmJob> holders = inventory.jobs().stream()
                .filter(job -> job.name().equals("vgpu-holder-" + assembled.id()))
                .toList();
        assertEquals(
                List.of("n2", "n3"),
                holders.stream()
                        .map(job -> job.allocations().getFirst().nodes())
                        .toList());
        for (SlurmJob holder : holders) {
            assertEquals("vgpu-lend", holder.partition());
            assertEquals(
                    List.of(3),
                    holder.allocations().getFirst().gres().getFirst().indices());
        }
        for (SlurmNode node : inventory.nodes()) {
            assertEquals(0, node.idle("gpu"), node.toString());
        }
        assertEquals(4, inventory.node("n1").orElseThrow().allocatedCpus(), "3 of the fill job, 1 of the vgpu job");
        assertEquals(
                5,
                inventory.node("n2").orElseThrow().allocatedCpus(),
                "3 of the fill job, the last user CPU, the holder");
        assertEquals(5, inventory.node("n1").orElseThrow().idle("vgpu"));
    }

    @Test
    void finishedJobsKeepTheirRequestButNoAllocation() {
        SlurmJob cancelled = scontrolView("one-idle").jobs().stream()
                .filter(job -> job.user().equals("nobody"))
                .findFirst()
                .orElseThrow();

        assertEquals("CANCELLED", cancelled.state());
        assertEquals(Map.of("vgpu", 1), cancelled.requestedPerNode());
        assertEquals(List.of(), cancelled.allocations());
        assertFalse(cancelled.held(), "only a pending job is held");
    }

    @Test
    void emptyClusterHasNoRecords() {
        assertEquals(List.of(), SlurmInventory.parseScontrolNodes("No nodes in the system\n"));
        assertEquals(List.of(), SlurmInventory.parseScontrolJobs("No jobs in the system\n"));
        assertEquals(List.of(), SlurmInventory.parseScontrolJobs(""));
    }

    @Test
    void valuesWithSpacesStayWhole() {
        SlurmNode node = SlurmInventory.parseScontrolNodes("""
                NodeName=n4 Arch=x86_64
                   CPUAlloc=0 CPUEfctv=16 CPUTot=16 CPULoad=0.00
                   Gres=gpu:2 GresUsed=gpu:0
                   State=IDLE+DRAIN ThreadsPerCore=1
                   OS=Linux 6.1.0 #1 SMP
                   Reason=GPU fell off the bus [root@2026-01-01T00:00:00]
                """).getFirst();

        assertEquals("IDLE+DRAIN", node.state());
        assertFalse(node.schedulable());
        assertEquals(List.of(), node.partitions());
        assertEquals(0, node.idle("vgpu"));
    }

    /**
     * Slurm 24.11 (slurm-24.11/drained: the testbed's nodes after bridge prologs failed) ends each node record with a
     * line of spaces and puts a drained node's Reason= after it, inside the record.
     */
    @Test
    void slurm2411sLineOfSpacesBeforeAReasonStaysInsideTheNodeRecord() {
        List<SlurmNode> nodes =
                SlurmInventory.parseScontrolNodes(capture("slurm-24.11/drained", "scontrol-show-node-d.txt"));

        assertEquals(
                List.of("n1", "n2", "n3"), nodes.stream().map(SlurmNode::name).toList());
        assertEquals(
                List.of("IDLE", "IDLE+DRAIN", "IDLE+DRAIN"),
                nodes.stream().map(SlurmNode::state).toList());
        assertTrue(nodes.getFirst().schedulable());
        assertFalse(nodes.get(1).schedulable());
        assertEquals(Map.of("gpu", 4, "vgpu", 8), nodes.get(2).configured());
    }

    @Test
    void notRespondingNodesAreNotSchedulable() {
        SlurmNode node = SlurmInventory.parseScontrolNodes(
                        "NodeName=n5 State=IDLE* CPUTot=4 CPUAlloc=0 Gres=gpu:1 GresUsed=gpu:0\n")
                .getFirst();

        assertFalse(node.schedulable());
    }

    @Test
    void outputThatIsNotScontrolsIsRefusedWithItsLine() {
        SlurmException e = assertThrows(
                SlurmException.class,
                () -> SlurmInventory.parseScontrolNodes("slurm_load_node error: Unable to contact slurm controller\n"));

        assertEquals(
                "SLURM_BAD_OUTPUT: cannot read the output of scontrol show node -d: line 1: expected Key=Value,"
                        + " got 'slurm_load_node'",
                e.codeName() + ": " + e.getMessage());
    }

    @Test
    void recordWithoutARequiredFieldIsNamed() {
        SlurmException e = assertThrows(
                SlurmException.class,
                () -> SlurmInventory.parseScontrolNodes(
                        "NodeName=n1 State=IDLE CPUTot=4 CPUAlloc=0 Gres=gpu:4\n\nNodeName=n2\n"));

        assertTrue(
                e.getMessage().endsWith("scontrol show node -d: the record at line 1 has no GresUsed= field"),
                e.getMessage());
    }

    @Test
    void malformedGresIsNamedWithItsNode() {
        SlurmException e = assertThrows(
                SlurmException.class,
                () -> SlurmInventory.parseScontrolNodes(
                        "NodeName=n1 State=IDLE CPUTot=4 CPUAlloc=0 Gres=gpu:4 GresUsed=gpu:x(y)\n"));

        assertTrue(e.getMessage().contains("GresUsed of n1: 'gpu:x(y)' is not a GRES entry"), e.getMessage());
    }

    @Test
    void malformedCpuCountIsNamedWithItsNode() {
        SlurmException e = assertThrows(
                SlurmException.class,
                () -> SlurmInventory.parseScontrolNodes(
                        "NodeName=n1 State=IDLE CPUTot=many CPUAlloc=0 Gres=gpu:4 GresUsed=gpu:0\n"));

        assertTrue(
                e.getMessage().endsWith("scontrol show node -d node n1: CPUTot=many is not a number"), e.getMessage());
    }

    @Test
    void malformedJobIdIsNamed() {
        SlurmException e = assertThrows(
                SlurmException.class,
                () -> SlurmInventory.parseScontrolJobs(
                        "JobId=abc JobName=x UserId=root(0) JobState=PENDING Reason=None Partition=gpu Priority=1\n"));

        assertTrue(e.getMessage().endsWith("JobId=abc is not a number"), e.getMessage());
    }

    @Test
    void truncatedJsonIsRefusedWithItsPosition() {
        String squeue = capture("one-idle", "squeue.json");
        String truncated = squeue.substring(0, squeue.length() / 2);

        SlurmException e = assertThrows(SlurmException.class, () -> SlurmInventory.parseSqueueJson(truncated));
        assertTrue(e.getMessage().contains("cannot read the output of squeue --json: line "), e.getMessage());
        assertTrue(e.getMessage().contains("(truncated output?)"), e.getMessage());
    }

    @Test
    void jsonWithoutJobsIsRefused() {
        SlurmException e = assertThrows(
                SlurmException.class, () -> SlurmInventory.parseSqueueJson("{\"meta\": {}, \"errors\": []}"));

        assertTrue(e.getMessage().endsWith("squeue --json: 'jobs' is missing, expected an array"), e.getMessage());
    }

    @Test
    void jsonJobWithAWrongTypeIsNamed() {
        SlurmException e = assertThrows(
                SlurmException.class, () -> SlurmInventory.parseSqueueJson("{\"jobs\": [{\"job_id\": \"7\"}]}"));

        assertTrue(e.getMessage().endsWith("squeue --json: 'job_id' is 7, expected a number"), e.getMessage());
    }

    @Test
    void gresDetailMustMatchTheAllocatedNodes() {
        String job = """
                {"jobs": [{"job_id": 7, "name": "x", "user_name": "u", "job_state": "RUNNING", "state_reason": "None",
                  "partition": "gpu", "priority": 1, "tres_per_node": "gres:gpu:1", "gres_detail": ["gpu:1(IDX:0)"],
                  "job_resources": {"allocated_nodes": []}}]}
                """;

        SlurmException e = assertThrows(SlurmException.class, () -> SlurmInventory.parseSqueueJson(job));
        assertTrue(e.getMessage().endsWith("has 1 gres_detail entries for 0 allocated nodes"), e.getMessage());
    }
}
