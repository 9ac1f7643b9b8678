package org.vgpu.tracker.slurm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HostListTest {
    @Test
    void expandsSingleNamesRangesAndListsInOrder() {
        assertEquals(List.of("n1"), HostList.expand("t", "n1"));
        assertEquals(List.of("n1", "n2", "n3"), HostList.expand("t", "n[1-3]"));
        assertEquals(List.of("gpu1", "gpu3", "gpu4", "login-a"), HostList.expand("t", "gpu[1,3-4],login-a"));
        assertEquals(List.of("rack1-n2-x", "rack1-n3-x"), HostList.expand("t", "rack1-n[2-3]-x"));
    }

    @Test
    void keepsZeroPadding() {
        assertEquals(List.of("n08", "n09", "n10"), HostList.expand("t", "n[08-10]"));
    }

    @Test
    void nullAndEmptyAreNoHosts() {
        assertEquals(List.of(), HostList.expand("t", "(null)"));
        assertEquals(List.of(), HostList.expand("t", " "));
    }

    @ParameterizedTest
    @ValueSource(strings = {"n[3-1]", "n[1-x]", "n[]", "n[1-2", "n1,,n2", "n[0-99999999]"})
    void refusesWhatIsNotAHostList(String text) {
        SlurmException refused =
                assertThrows(SlurmException.class, () -> HostList.expand("scontrol show job -d", text));
        assertTrue(refused.getMessage().contains("scontrol show job -d"), refused.getMessage());
    }
}
