package org.vgpu.simulator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.workload.WorkloadClass;

class OverheadModelTest {
    @Test
    void theMeasuredDefaultsComeFromTheProjectsBenchmarks() {
        OverheadModel model = OverheadModel.measured();
        assertEquals(1.73, model.slowdown(WorkloadClass.MOLECULAR_DYNAMICS), 1e-9);
        assertEquals(1.94 / 1.06, model.slowdown(WorkloadClass.TRAINING), 0.01);
        assertEquals(9, model.startupSeconds(), 1e-9);
        assertEquals(1, model.hookLatencySeconds(), 1e-9);
        assertEquals(0.025 + 0.30, model.migrationBlockedSeconds(WorkloadClass.MOLECULAR_DYNAMICS), 1e-9);
        assertEquals(OverheadModel.keys().size(), model.describe().size());
        for (String line : model.describe()) {
            assertTrue(line.matches(".*(docs/.*2026-11-\\d\\d|2026-11-\\d\\d.*docs/|assumed).*"), line);
        }
    }

    @Test
    void withOverridesOneFigureAndSaysSo() {
        OverheadModel model = OverheadModel.measured().with("slowdown.molecular-dynamics", "1.2");
        assertEquals(1.2, model.slowdown(WorkloadClass.MOLECULAR_DYNAMICS), 1e-9);
        assertEquals(1.73, OverheadModel.measured().slowdown(WorkloadClass.MOLECULAR_DYNAMICS), 1e-9);
        assertTrue(
                model.describe().contains("slowdown.molecular-dynamics = 1.200 x  (set on the command line)"),
                model.describe().toString());
    }

    @Test
    void anUnknownKeyIsRejectedWithTheKnownOnes() {
        IllegalArgumentException error = assertThrows(
                IllegalArgumentException.class, () -> OverheadModel.measured().with("slowdwn.md", "2"));
        assertTrue(
                error.getMessage().startsWith("unknown overhead parameter 'slowdwn.md'; known: slowdown."),
                error.getMessage());
    }

    @Test
    void absurdValuesAreRejectedWithTheRangeTheyNeed() {
        assertRejected(
                "startup-seconds", "-1", "startup-seconds: -1 is out of range; it needs a finite number of s >= 0");
        assertRejected(
                "slowdown.training",
                "0.5",
                "slowdown.training: 0.5 is out of range; it needs a finite number of x >= 1");
        assertRejected("migration-seconds-per-gib", "NaN", "out of range");
        assertRejected("hook-latency-seconds", "Infinity", "out of range");
        assertRejected("state-gib.unknown", "four", "'four' is not a number of GiB");
    }

    @Test
    void theFreeModelHasNoOverheadButKeepsTheStateSizes() {
        OverheadModel free = OverheadModel.measured().free();
        for (WorkloadClass workloadClass : WorkloadClass.values()) {
            assertEquals(1, free.slowdown(workloadClass), 1e-9);
            assertEquals(0, free.migrationBlockedSeconds(workloadClass), 1e-9);
            assertEquals(OverheadModel.measured().stateGib(workloadClass), free.stateGib(workloadClass), 1e-9);
        }
        assertEquals(0, free.startupSeconds(), 1e-9);
        assertEquals(0, free.hookLatencySeconds(), 1e-9);
    }

    private static void assertRejected(String key, String value, String message) {
        IllegalArgumentException error = assertThrows(
                IllegalArgumentException.class, () -> OverheadModel.measured().with(key, value));
        assertTrue(error.getMessage().contains(message), error.getMessage());
    }
}
