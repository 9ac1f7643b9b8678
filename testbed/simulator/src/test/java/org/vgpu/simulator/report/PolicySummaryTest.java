package org.vgpu.simulator.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;

class PolicySummaryTest {
    @Test
    void figuresFollowFromTheJobsOutcomes() {
        PolicySummary alone = PolicySummary.of(Runs.slurmAlone());
        assertEquals(5, alone.jobs());
        assertEquals(200, alone.meanWaitSeconds(), 1e-9);
        assertEquals(200, alone.medianWaitSeconds(), 1e-9);
        assertEquals(400, alone.p95WaitSeconds(), 1e-9);
        // response / run: 1, 2, 3, 4, 5
        assertEquals(3, alone.meanBoundedSlowdown(), 1e-9);
        assertTrue(Double.isNaN(alone.meanBorrowerSlowdown()), "no job borrowed");
        assertEquals(0.5, alone.gpuUtilisation(), 1e-9);
        assertEquals(0, alone.jobsThatBorrowed());
        assertEquals(0, alone.jobsKilledAtTimeLimit());

        PolicySummary vgpu = PolicySummary.of(Runs.vgpu());
        assertEquals(60, vgpu.meanWaitSeconds(), 1e-9);
        assertEquals(0.20, vgpu.meanBorrowerSlowdown(), 1e-9);
        assertEquals(2, vgpu.jobsThatBorrowed());
        assertEquals(1, vgpu.migrations());
        assertEquals(1, vgpu.jobsKilledAtTimeLimit());
        assertEquals(1.0, vgpu.remoteGpuHours(), 1e-9);
        assertEquals(0.9, vgpu.gpuUtilisation(), 1e-9);
    }

    @Test
    void percentilesAreNearestRank() {
        double[] waits = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20};
        assertEquals(10, PolicySummary.percentile(waits, 50));
        assertEquals(19, PolicySummary.percentile(waits, 95));
        assertEquals(20, PolicySummary.percentile(waits, 100));
        assertEquals(7, PolicySummary.percentile(new double[] {7}, 95));
    }

    @Test
    void theChangeAgainstSlurmAloneIsInPercentAndUndefinedWithoutABase() {
        Comparison comparison = Comparison.of("test", List.of(), List.of(Runs.slurmAlone(), Runs.vgpu()));
        assertEquals(Policy.SLURM_ALONE, comparison.baseline().orElseThrow().policy());
        assertEquals(-70, Comparison.changePercent(60, 200), 1e-9);
        assertTrue(Double.isNaN(Comparison.changePercent(60, 0)));
        PolicyRun vgpuOnly = Runs.vgpu();
        assertTrue(
                Comparison.of("test", List.of(), List.of(vgpuOnly)).baseline().isEmpty());
    }
}
