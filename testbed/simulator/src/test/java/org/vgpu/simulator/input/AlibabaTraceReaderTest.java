package org.vgpu.simulator.input;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalLong;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.WorkloadException;

class AlibabaTraceReaderTest {
    /** The trace beside the checkout, where the project keeps it; the test is skipped on a machine without it. */
    private static final Path TRACE =
            Path.of(System.getProperty("vgpu.alibabaTrace", "/work/shared/traces/alibaba-gpu-v2023"));

    @TempDir
    Path dir;

    @Test
    void readsTheRealTraceCountingWhatItLeavesOut() throws Exception {
        assumeTrue(Files.isRegularFile(TRACE.resolve("pods.csv")), "no Alibaba trace at " + TRACE);
        LoadedWorkload whole = AlibabaTraceReader.read(TRACE, AlibabaTraceReader.Fractional.WHOLE);
        List<SimNode> nodes = whole.workload().nodes();
        assertEquals(1_213, nodes.size());
        assertEquals(6_212, nodes.stream().mapToInt(SimNode::gpus).sum());
        assertEquals(6_203, whole.workload().jobs().size());
        List<String> summary = whole.summary();
        assertTrue(summary.contains("kept 1,213 nodes with 6,212 GPUs"), summary.toString());
        assertTrue(summary.contains("skipped 1,088 pods without GPUs (num_gpu 0)"), summary.toString());
        assertTrue(summary.contains("skipped 861 pods never scheduled (no scheduled_time)"), summary.toString());
        assertTrue(
                summary.contains("2,573 pods asked a fraction of a GPU (gpu_milli under 1000) and take one whole GPU"));
        assertTrue(summary.contains(
                "32 pods still running at the trace's end (12,902,960 s) kept with their run cut there"));

        LoadedWorkload skipping = AlibabaTraceReader.read(TRACE, AlibabaTraceReader.Fractional.SKIP);
        assertEquals(3_630, skipping.workload().jobs().size());
        assertTrue(skipping.summary()
                .contains("skipped 2,573 pods that asked a fraction of a GPU (gpu_milli under 1000)"));
    }

    @Test
    void aPodIsAJobFromCreationThroughSchedulingToDeletion() throws Exception {
        write(
                "openb-node-0000,96000,262144,8,V100M32\nopenb-node-0001,8000,65536,0,\n",
                "p0,12000,16384,2,1000,,LS,Succeeded,100,700,130\np1,1000,16384,0,0,,BE,Running,0,50,0\n");
        LoadedWorkload loaded = AlibabaTraceReader.read(dir, AlibabaTraceReader.Fractional.WHOLE);
        assertEquals(
                List.of(new SimNode("openb-node-0000", 8, 96)),
                loaded.workload().nodes());
        assertEquals(
                List.of(new SimJob(
                        "p0",
                        100,
                        2,
                        12,
                        600,
                        570,
                        "",
                        loaded.workload().jobs().getFirst().workloadClass(),
                        OptionalLong.of(130))),
                loaded.workload().jobs());
        assertTrue(
                loaded.summary().contains("skipped 1 nodes without GPUs"),
                loaded.summary().toString());
    }

    @Test
    void everyMalformedLineOfEitherFileIsReported() throws IOException {
        write(
                "n0,96000,262144,eight,V100\n",
                "p0,12000,16384,2,1000,,LS,Succeeded,100,700,130\n"
                        + "p1,12000,16384,2,1000,,LS,Succeeded,100\n"
                        + "p2,12000,16384,2,1000,,LS,Succeeded,800,700,900\n");
        WorkloadException error = assertThrows(
                WorkloadException.class, () -> AlibabaTraceReader.read(dir, AlibabaTraceReader.Fractional.WHOLE));
        assertEquals(
                List.of(
                        dir.resolve("nodes.csv") + ":2: column 4 'eight' is no whole number; expected a whole number"
                                + " >= 0",
                        dir.resolve("pods.csv") + ":3: 9 fields; expected 11 as the header names: "
                                + AlibabaTraceReader.PODS_HEADER,
                        dir.resolve("pods.csv") + ":4: creation, scheduled and deletion times are out of order;"
                                + " expected creation_time <= scheduled_time <= deletion_time"),
                error.problems());
    }

    private void write(String nodes, String pods) throws IOException {
        Files.writeString(dir.resolve("nodes.csv"), AlibabaTraceReader.NODES_HEADER + "\n" + nodes);
        Files.writeString(dir.resolve("pods.csv"), AlibabaTraceReader.PODS_HEADER + "\n" + pods);
    }
}
