package org.vgpu.simulator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.Workload;

class DeterminismTest {
    @Test
    void theSameWorkloadAndPolicyGiveTheSameOutcomes() {
        Workload workload = SmallClusters.mix(7, 500);
        for (Policy policy : Policy.values()) {
            PolicyRun first = SmallClusters.run(workload, policy);
            PolicyRun second = SmallClusters.run(workload, policy);
            assertEquals(first.jobs(), second.jobs(), policy.shortName());
            assertEquals(first.busyGpuSeconds(), second.busyGpuSeconds(), 1e-9);
        }
    }

    @Test
    void everyJobRunsItsWorkAndEachPolicyReportsProgressUpToTheEnd() {
        Workload workload = SmallClusters.mix(3, 400);
        for (Policy policy : Policy.values()) {
            List<Double> fractions = new ArrayList<>();
            PolicyRun run = new Simulator(OverheadModel.measured()).run(workload, policy, fractions::add);
            assertEquals(workload.jobs().size(), run.jobs().size());
            assertTrue(run.jobs().stream().allMatch(job -> job.startSecond() >= job.submitSecond()));
            assertTrue(run.jobs().stream().allMatch(job -> job.endSecond() >= job.startSecond()));
            assertEquals(1.0, fractions.getLast(), 1e-9);
            assertTrue(fractions.size() <= 101, "progress is told per percent, not per event");
            assertTrue(run.gpuUtilisation() > 0 && run.gpuUtilisation() <= 1, String.valueOf(run.gpuUtilisation()));
        }
    }
}
