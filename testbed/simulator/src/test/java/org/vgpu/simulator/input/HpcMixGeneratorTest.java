package org.vgpu.simulator.input;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.WorkloadClass;

class HpcMixGeneratorTest {
    private static final List<SimNode> CLUSTER = ClusterSpec.parse("16x8");

    @Test
    void theSameSeedGivesTheSameMixAndAnotherSeedAnother() {
        List<SimJob> once = HpcMixGenerator.generate(LoadLevel.MEDIUM, CLUSTER, 500, 7)
                .workload()
                .jobs();
        List<SimJob> again = HpcMixGenerator.generate(LoadLevel.MEDIUM, CLUSTER, 500, 7)
                .workload()
                .jobs();
        List<SimJob> other = HpcMixGenerator.generate(LoadLevel.MEDIUM, CLUSTER, 500, 8)
                .workload()
                .jobs();
        assertEquals(once, again);
        assertNotEquals(once, other);
    }

    @Test
    void theOfferedLoadIsNearTheLevelAsked() {
        for (LoadLevel level : LoadLevel.values()) {
            double offered = OfferedLoad.of(
                    HpcMixGenerator.generate(level, CLUSTER, 20_000, 1).workload());
            assertEquals(level.offeredLoad(), offered, 0.05 * level.offeredLoad(), level.name());
        }
    }

    @Test
    void sizesRunTimesLimitsAndClassesFollowTheStatedDistributions() {
        List<SimJob> jobs = HpcMixGenerator.generate(LoadLevel.HEAVY, CLUSTER, 20_000, 3)
                .workload()
                .jobs();
        Map<Integer, Long> sizes = jobs.stream().collect(Collectors.groupingBy(SimJob::gpus, Collectors.counting()));
        assertEquals(Set.of(1, 2, 4, 8), sizes.keySet());
        assertEquals(0.40, sizes.get(1) / 20_000.0, 0.02);
        assertEquals(0.15, sizes.get(8) / 20_000.0, 0.02);
        double[] runs = jobs.stream().mapToDouble(SimJob::runSeconds).sorted().toArray();
        assertEquals(
                HpcMixGenerator.MEDIAN_RUN_SECONDS, runs[runs.length / 2], 0.1 * HpcMixGenerator.MEDIAN_RUN_SECONDS);
        double mean = java.util.Arrays.stream(runs).average().orElseThrow();
        assertTrue(mean > 2 * runs[runs.length / 2], "heavy tail: mean " + mean + " s");
        assertTrue(jobs.stream()
                .allMatch(job -> job.timeLimitSeconds() >= job.runSeconds()
                        && job.timeLimitSeconds() % 60 == 0
                        && job.timeLimitSeconds() <= HpcMixGenerator.MAX_LIMIT_FACTOR * job.runSeconds() + 60));
        Map<WorkloadClass, Long> classes =
                jobs.stream().collect(Collectors.groupingBy(SimJob::workloadClass, Collectors.counting()));
        assertEquals(0.2, classes.get(WorkloadClass.COMPUTE_BOUND) / 20_000.0, 0.02);
    }

    @Test
    void noJobAsksMoreGpusThanTheLargestNode() {
        List<SimJob> jobs = HpcMixGenerator.generate(LoadLevel.LIGHT, ClusterSpec.parse("4x2"), 2_000, 1)
                .workload()
                .jobs();
        assertEquals(Set.of(1, 2), jobs.stream().map(SimJob::gpus).collect(Collectors.toSet()));
        assertEquals(
                2_000,
                jobs.stream()
                        .map(SimJob::id)
                        .collect(Collectors.toMap(Function.identity(), id -> 1))
                        .size());
    }
}
