package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.siteconfig.HostList;

class SlurmJobTest {
    private static final String SOURCE = "scontrol show job -d job 7 Nodes";

    private static SlurmJob running(String nodes) {
        return new SlurmJob(
                7,
                "train",
                "alice",
                "RUNNING",
                "None",
                "gpu",
                1,
                1,
                Map.of("gpu", 2),
                List.of(new SlurmJob.NodeAllocation(nodes, GresItem.parseList("t", "gpu:2(IDX:0-1)"))));
    }

    @Test
    void eachNodeOfAnAllocationsHostListHoldsItsGpus() {
        assertEquals(
                Map.of("n08", List.of(0, 1), "n09", List.of(0, 1), "n10", List.of(0, 1), "login-a", List.of(0, 1)),
                running("n[08-10],login-a").gpuIndicesByNode());
    }

    @Test
    void slurmsNullAndAnEmptyListAreNoNodes() {
        assertEquals(List.of(), SlurmJob.nodeNames(SOURCE, "(null)"));
        assertEquals(List.of(), SlurmJob.nodeNames(SOURCE, " "));
        assertEquals(List.of("n1", "n2"), SlurmJob.nodeNames(SOURCE, " n[1-2]\n"));
    }

    /** Slurm's output gets the configuration's reasons, named as output of the command that printed it. */
    @ParameterizedTest
    @ValueSource(strings = {"n[3-1]", "n[1-x]", "n[]", "n[1-2", "n1,,n2", "n[0-99999999]", "n]1", "n[1-2]@x"})
    void aNodeListHostListRefusesIsSlurmOutputTheTrackerCannotRead(String nodes) {
        String reason = assertThrows(IllegalArgumentException.class, () -> HostList.expand(nodes))
                .getMessage();

        SlurmException refused =
                assertThrows(SlurmException.class, () -> running(nodes).gpuIndicesByNode());

        assertEquals(SlurmException.Code.BAD_OUTPUT, refused.code());
        assertEquals("cannot read the output of " + SOURCE + ": " + reason, refused.getMessage());
    }
}
