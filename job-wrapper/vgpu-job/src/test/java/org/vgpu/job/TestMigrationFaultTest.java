package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import org.vgpu.common.error.ConfigException;
import org.vgpu.migration.FaultPoint;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.runtime.api.VgpuException;

class TestMigrationFaultTest {
    @Test
    void noFaultUnlessTheVariableIsSet() {
        assertEquals(Optional.empty(), TestMigrationFault.from(Map.of("VGPU_COUNT", "3")));
    }

    @Test
    void theVariableNamesAFaultPointInLowerCaseWithDashes() {
        assertEquals(
                Optional.of(FaultPoint.REPLAY_ALLOCATION),
                TestMigrationFault.from(Map.of(TestMigrationFault.VARIABLE, "replay-allocation")));
        assertEquals(
                Optional.of(FaultPoint.OPEN_TARGET),
                TestMigrationFault.from(Map.of(TestMigrationFault.VARIABLE, "open-target")));
    }

    @Test
    void anUnknownFaultIsRefusedNamingTheChoices() {
        ConfigException refused = assertThrows(
                ConfigException.class,
                () -> TestMigrationFault.from(Map.of(TestMigrationFault.VARIABLE, "REPLAY_ALLOCATION")));
        assertTrue(
                refused.detail().contains("open-target, replay-allocation, mem-sync-batch, verify"), refused.detail());
        assertTrue(refused.detail().contains("test-only"), refused.detail());
    }

    @Test
    void theFaultFailsItsOwnPointOnlyInTheProductsWords() {
        MigrationFaults faults = TestMigrationFault.at(FaultPoint.REPLAY_ALLOCATION);
        assertDoesNotThrow(() -> faults.reached(FaultPoint.OPEN_TARGET, 0, null));
        assertDoesNotThrow(() -> faults.reached(FaultPoint.REPLAY_ALLOCATION, 1, null));
        VgpuException failed =
                assertThrows(VgpuException.class, () -> faults.reached(FaultPoint.REPLAY_ALLOCATION, 0, null));
        assertTrue(failed.detail().startsWith("test-only fault injected at replay-allocation"), failed.detail());
        assertTrue(
                TestMigrationFault.warning(FaultPoint.VERIFY).startsWith("vgpu run: TEST-ONLY FAULT:"),
                TestMigrationFault.warning(FaultPoint.VERIFY));
    }
}
