package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HolderOutputTest {
    @Test
    void aHoldersOutputFileIsNamedWithItsJobIdAndNode() {
        HolderOutput output = new HolderOutput("/var/log/vgpu/holder-%j.out");
        assertFalse(output.discarded());
        assertEquals("its output is in /var/log/vgpu/holder-4711.out on n2", output.of(4711, "n2"));
    }

    @Test
    void discardedOutputIsSaidToBeDiscardedNotNamedAsAFile() {
        HolderOutput output = new HolderOutput(HolderOutput.DISCARDED);
        assertTrue(output.discarded());
        assertEquals("its output was discarded (the tracker's --holder-output is /dev/null)", output.of(4711, "n2"));
    }
}
