package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.tracker.slurm.SlurmInventoryTest.capture;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * On output captured from the Slurm 24.11.5 testbed (VGPU_TESTBED_SLURM=24.11), the text and each data_parser
 * version's JSON of the same moment: slurm-24.11/busy (a finished job; a job on n1 and n2 with a GPU on each; a job
 * waiting for GPUs; a held vgpu job; a job pinned to n2 with gpu:1,vgpu:2; a holder on n3 and a grant holder on n2;
 * n3 drained with the holder on it) and slurm-24.11/down (the same a moment later, n3 down, its holder requeued).
 * one-idle and assembled are the captures of scenarios one-idle-gpu-per-node and assembly-by-hand (v0.0.42 only).
 */
class ScontrolJsonTest {
    private static final String SLURM_24_11 = "slurm-24.11/";

    private static SlurmInventory textView(String state) {
        return SlurmInventory.fromScontrol(
                capture(SLURM_24_11 + state, "scontrol-show-node-d.txt"),
                capture(SLURM_24_11 + state, "scontrol-show-job-d.txt"));
    }

    private static SlurmInventory jsonView(String state, DataParser parser) {
        ScontrolJson reader = new ScontrolJson(parser);
        return new SlurmInventory(
                reader.nodes(capture(SLURM_24_11 + state, "scontrol-show-node-d." + parser.version() + ".json")),
                reader.jobs(capture(SLURM_24_11 + state, "scontrol-show-job-d." + parser.version() + ".json")));
    }

    private static String busyJobs(DataParser parser) {
        return capture(SLURM_24_11 + "busy", "scontrol-show-job-d." + parser.version() + ".json");
    }

    private static String busyNodes(DataParser parser) {
        return capture(SLURM_24_11 + "busy", "scontrol-show-node-d." + parser.version() + ".json");
    }

    @ParameterizedTest
    @EnumSource(DataParser.class)
    void everyVersionsJsonReadsAsTheTextOfTheSameMoment(DataParser parser) {
        assertEquals(textView("busy"), jsonView("busy", parser));
        assertEquals(textView("down"), jsonView("down", parser));
    }

    @ParameterizedTest
    @ValueSource(strings = {"one-idle", "assembled"})
    void theScenariosCapturesReadAsTheirText(String state) {
        ScontrolJson reader = new ScontrolJson(DataParser.V0_0_42);
        SlurmInventory json = new SlurmInventory(
                reader.nodes(capture(SLURM_24_11 + state, "scontrol-show-node-d.json")),
                reader.jobs(capture(SLURM_24_11 + state, "scontrol-show-job-d.json")));
        assertEquals(textView(state), json);
    }

    @ParameterizedTest
    @EnumSource(DataParser.class)
    void readsWhatTheTrackerNeedsOfEachJob(DataParser parser) {
        SlurmInventory inventory = jsonView("busy", parser);

        SlurmJob twoNodes = inventory.job(2).orElseThrow();
        assertEquals("RUNNING", twoNodes.state());
        assertEquals(Map.of("n1", List.of(0), "n2", List.of(0)), twoNodes.gpuIndicesByNode());
        assertEquals(Map.of("gpu", 1), twoNodes.requestedPerNode());

        SlurmJob finished = inventory.job(1).orElseThrow();
        assertEquals("COMPLETED", finished.state());
        assertFalse(finished.active());
        assertEquals(List.of(), finished.allocations());

        SlurmJob waiting = inventory.job(4).orElseThrow();
        assertEquals("PENDING", waiting.state());
        assertEquals("Resources", waiting.reason());
        assertFalse(waiting.held());

        SlurmJob held = inventory.job(5).orElseThrow();
        assertTrue(held.held() && held.asksForVgpu(), held.toString());
        assertEquals(Map.of("vgpu", 3), held.requestedPerNode());

        SlurmJob pinned = inventory.job(6).orElseThrow();
        assertEquals(Map.of("gpu", 1, "vgpu", 2), pinned.requestedPerNode());
        assertEquals(List.of(1), pinned.gpuIndicesOn("n2"));

        SlurmJob holder = inventory.job(7).orElseThrow();
        assertEquals("vgpu-holder-6-v1", holder.name());
        assertEquals("vgpu-lend", holder.partition());
        assertEquals("root", holder.user());
        assertEquals(List.of(0), holder.gpuIndicesOn("n3"));
        assertEquals(1, holder.cpus());
    }

    @ParameterizedTest
    @EnumSource(DataParser.class)
    void aDrainedOrDownNodeLendsNothing(DataParser parser) {
        SlurmNode drained = jsonView("busy", parser).node("n3").orElseThrow();
        assertEquals("MIXED+DRAIN", drained.state());
        assertFalse(drained.schedulable());
        assertEquals(3, drained.idle("gpu"));

        SlurmNode down = jsonView("down", parser).node("n3").orElseThrow();
        assertEquals("DOWN+DRAIN", down.state());
        assertFalse(down.schedulable());
        assertTrue(jsonView("down", parser).node("n1").orElseThrow().schedulable());
        assertEquals(List.of("gpu", "vgpu-lend"), down.partitions());
        assertEquals(Map.of("gpu", 4, "vgpu", 8), down.configured());
    }

    @ParameterizedTest
    @EnumSource(DataParser.class)
    void aJobSlurmNoLongerKnowsIsADocumentWithoutJobs(DataParser parser) {
        String json = capture(SLURM_24_11 + "unknown-job", "scontrol-show-job-d-999999." + parser.version() + ".json");
        assertEquals(List.of(), new ScontrolJson(parser).jobs(json));
    }

    @Test
    void aDocumentOfAnotherVersionIsRefusedNamingBoth() {
        SlurmException e = assertThrows(
                SlurmException.class, () -> new ScontrolJson(DataParser.V0_0_40).nodes(busyNodes(DataParser.V0_0_42)));
        assertEquals(
                "cannot read the output of scontrol --json=v0.0.40 show node -d: the document is"
                        + " data_parser/v0.0.42 of Slurm 24.11.5, expected data_parser/v0.0.40",
                e.getMessage());
        assertEquals(SlurmException.Code.BAD_OUTPUT, e.code());
    }

    @Test
    void aVersionTheTrackerDoesNotKnowIsRefused() {
        String v43 = busyJobs(DataParser.V0_0_42).replace("data_parser\\/v0.0.42", "data_parser\\/v0.0.43");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_42).jobs(v43));
        assertTrue(
                message.endsWith(
                        "the document is data_parser/v0.0.43 of Slurm 24.11.5, expected" + " data_parser/v0.0.42"),
                message);
    }

    @Test
    void v0040sAllocationIsRefusedByTheReaderOfV0041() {
        // The same document, claimed to be v0.0.41: its job_resources have no nodes.allocation.
        String claimed = busyJobs(DataParser.V0_0_40).replace("data_parser\\/v0.0.40", "data_parser\\/v0.0.41");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_41).jobs(claimed));
        assertTrue(message.contains("jobs[1].job_resources.nodes"), message);
        assertTrue(message.endsWith("(data_parser v0.0.41)"), message);
    }

    @ParameterizedTest
    @EnumSource(DataParser.class)
    void truncatedOutputIsRefused(DataParser parser) {
        String jobs = busyJobs(parser);
        String cut = jobs.substring(0, jobs.length() / 2);
        String message = refusal(() -> new ScontrolJson(parser).jobs(cut));
        assertTrue(message.contains("truncated output?"), message);
    }

    @Test
    void aFieldOfAnotherTypeIsRefusedNamingItsPath() {
        String priorityNumber =
                busyJobs(DataParser.V0_0_42).replaceFirst("\"priority\": \\{[^}]*\\}", "\"priority\": 1");
        assertRefused(
                DataParser.V0_0_42,
                priorityNumber,
                "jobs[0].priority is a whole number, expected an object (data_parser v0.0.42)");

        String cpusText = busyNodes(DataParser.V0_0_41).replaceFirst("\"cpus\": 8", "\"cpus\": \"8\"");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_41).nodes(cpusText));
        assertEquals(
                "cannot read the output of scontrol --json=v0.0.41 show node -d: nodes[0].cpus is a string, expected"
                        + " a whole number (data_parser v0.0.41)",
                message);

        String stateText = busyJobs(DataParser.V0_0_40)
                .replaceFirst("\"job_state\": \\[\\s*\"COMPLETED\"\\s*\\]", "\"job_state\": \"COMPLETED\"");
        assertRefused(
                DataParser.V0_0_40,
                stateText,
                "jobs[0].job_state is a string, expected an array (data_parser v0.0.40)");

        String idText = busyJobs(DataParser.V0_0_42).replaceFirst("\"job_id\": 1,", "\"job_id\": \"1\",");
        assertRefused(
                DataParser.V0_0_42,
                idText,
                "jobs[0].job_id is a string, expected a whole number (data_parser v0.0.42)");

        String fraction = busyJobs(DataParser.V0_0_42).replaceFirst("\"job_id\": 1,", "\"job_id\": 1.5,");
        assertRefused(
                DataParser.V0_0_42,
                fraction,
                "jobs[0].job_id is a fraction, expected a whole number (data_parser v0.0.42)");

        String tresNumber =
                busyJobs(DataParser.V0_0_42).replaceFirst("\"tres_per_node\": \"\"", "\"tres_per_node\": 0");
        assertRefused(
                DataParser.V0_0_42,
                tresNumber,
                "jobs[0].tres_per_node is a whole number, expected a string (data_parser v0.0.42)");
    }

    @Test
    void aMissingOrNullFieldIsRefusedNamingIt() {
        String noGresUsed = busyNodes(DataParser.V0_0_42).replaceFirst("\"gres_used\": \"[^\"]*\",", "");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_42).nodes(noGresUsed));
        assertEquals(
                "cannot read the output of scontrol --json=v0.0.42 show node -d: nodes[0] has no 'gres_used', which"
                        + " the tracker reads (data_parser v0.0.42)",
                message);

        String nullName = busyJobs(DataParser.V0_0_42).replaceFirst("\"name\": \"finishes\"", "\"name\": null");
        assertRefused(DataParser.V0_0_42, nullName, "jobs[0].name is null (data_parser v0.0.42)");

        String nullState = busyJobs(DataParser.V0_0_42)
                .replaceFirst("\"job_state\": \\[\\s*\"COMPLETED\"\\s*\\]", "\"job_state\": [null]");
        assertRefused(
                DataParser.V0_0_42, nullState, "jobs[0].job_state[0] is null, expected a string (data_parser v0.0.42)");

        String noMeta = "{\"nodes\": [], \"errors\": []}";
        String noMetaRefused = refusal(() -> new ScontrolJson(DataParser.V0_0_42).nodes(noMeta));
        assertTrue(
                noMetaRefused.endsWith("the document has no 'meta', which the tracker reads (data_parser v0.0.42)"),
                noMetaRefused);
    }

    @Test
    void anUnsetPriorityIsRefusedNotTakenForZero() {
        String unset = busyJobs(DataParser.V0_0_42)
                .replaceFirst("\"priority\": \\{\\s*\"set\": true,", "\"priority\": {\"set\": false,");
        assertRefused(DataParser.V0_0_42, unset, "job 1: 'priority' is not set, expected a number");
    }

    @Test
    void moreGresDetailsThanNodesAreRefused() {
        String extra = busyJobs(DataParser.V0_0_42)
                .replaceFirst("\"gpu:2\\(IDX:1-2\\)\"", "\"gpu:2(IDX:1-2)\", \"gpu:1(IDX:3)\"");
        assertRefused(
                DataParser.V0_0_42,
                extra,
                "job 3: has 2 gres_detail entries for 1 allocated nodes (data_parser v0.0.42)");
    }

    @Test
    void slurmsOwnErrorsAreRefusedWithTheirWords() {
        String withError = busyNodes(DataParser.V0_0_42)
                .replaceFirst(
                        "\"errors\": \\[\\]",
                        "\"errors\": [{\"description\": \"Unable to query nodes\", \"error_number\": 1,"
                                + " \"error\": \"Unspecified error\", \"source\": \"slurm_load_node\"}]");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_42).nodes(withError));
        assertTrue(message.endsWith("Slurm reports 'Unable to query nodes (Unspecified error)'"), message);
    }

    @Test
    void textIsNotJson() {
        String text = capture(SLURM_24_11 + "busy", "scontrol-show-node-d.txt");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_42).nodes(text));
        assertTrue(
                message.startsWith("cannot read the output of scontrol --json=v0.0.42 show node -d: line 1"), message);
    }

    @Test
    void aNumberOutOfRangeIsRefused() {
        String huge = busyNodes(DataParser.V0_0_42).replaceFirst("\"cpus\": 8", "\"cpus\": 99999999999");
        String message = refusal(() -> new ScontrolJson(DataParser.V0_0_42).nodes(huge));
        assertTrue(message.contains("nodes[0].cpus"), message);
    }

    @Test
    void theCommandsAskForTheVersionRead() {
        ScontrolJson reader = new ScontrolJson(DataParser.V0_0_41);
        assertEquals(List.of("scontrol", "--json=v0.0.41", "show", "node", "-d"), reader.showNodesCommand());
        assertEquals(
                List.of("scontrol", "--json=v0.0.41", "show", "job", "-d", "7"),
                reader.showJobsCommand(Optional.of(7L)));
    }

    private static void assertRefused(DataParser parser, String jobs, String expectedEnd) {
        String message = refusal(() -> new ScontrolJson(parser).jobs(jobs));
        assertTrue(message.endsWith(expectedEnd), message);
    }

    /** What the reader said when it refused. */
    private static String refusal(Executable read) {
        return assertThrows(SlurmException.class, read).getMessage();
    }
}
