package org.vgpu.simulator.input;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.workload.SimNode;

class ClusterSpecTest {
    @Test
    void countedGroupsAreNamedInOrder() {
        assertEquals(
                List.of(
                        new SimNode("n1", 8, 64),
                        new SimNode("n2", 8, 64),
                        new SimNode("n3", 4, ClusterSpec.UNCONSTRAINED_CPUS)),
                ClusterSpec.parse("2x8x64+1x4"));
    }

    @Test
    void slurmHostListsKeepTheirPadding() {
        List<SimNode> nodes = ClusterSpec.parse("gpu[08-10]:4:32 + big:8");
        assertEquals(
                List.of("gpu08", "gpu09", "gpu10", "big"),
                nodes.stream().map(SimNode::name).toList());
        assertEquals(32, nodes.getFirst().cpus());
        assertEquals(8, nodes.getLast().gpus());
    }

    @Test
    void whatIsNoClusterIsRefusedWithTheFormat() {
        IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> ClusterSpec.parse("12 by 4"));
        assertTrue(bad.getMessage().contains("'12 by 4' is not a node group; expected COUNTxGPUS"), bad.getMessage());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ClusterSpec.parse("n1:4+n1:4"))
                .getMessage()
                .contains("node n1 is given twice"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ClusterSpec.parse("4x0"))
                .getMessage()
                .contains("has no GPU"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> ClusterSpec.parse("n[5-1]:4"))
                .getMessage()
                .contains("counts down"));
        assertThrows(IllegalArgumentException.class, () -> ClusterSpec.parse("2000000x4"));
    }
}
