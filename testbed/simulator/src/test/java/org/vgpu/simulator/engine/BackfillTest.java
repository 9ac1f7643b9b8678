package org.vgpu.simulator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.simulator.engine.SmallClusters.job;
import static org.vgpu.simulator.engine.SmallClusters.nodes;
import static org.vgpu.simulator.engine.SmallClusters.outcome;
import static org.vgpu.simulator.engine.SmallClusters.run;

import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.Workload;

class BackfillTest {
    /** One 4-GPU node: a 3-GPU job runs 0-100; a 4-GPU job waits for it, reserved for 100; then a 1-GPU job. */
    private static Workload behindAReservation(long thirdJobLimit) {
        return new Workload(
                "backfill",
                nodes(1, 4),
                List.of(job("a", 0, 3, 100, 100), job("head", 1, 4, 50, 100), job("c", 2, 1, 40, thirdJobLimit)));
    }

    /** One 2-GPU node: three 2-GPU jobs, each waiting for the one before. */
    private static Workload sameSizeJobs() {
        return new Workload(
                "fifo",
                nodes(1, 2),
                List.of(job("a", 0, 2, 100, 100), job("b", 5, 2, 10, 100), job("c", 6, 2, 10, 100)));
    }

    @Test
    void aShortJobPassesTheHeadWithoutDelayingItsReservation() {
        PolicyRun run = run(behindAReservation(90), Policy.SLURM_ALONE);
        assertEquals(2, outcome(run, "c").startSecond(), 1e-9);
        assertEquals(42, outcome(run, "c").endSecond(), 1e-9);
        assertEquals(100, outcome(run, "head").startSecond(), 1e-9);
    }

    @Test
    void aJobWhoseLimitReachesPastTheReservationWaitsBehindTheHead() {
        PolicyRun run = run(behindAReservation(500), Policy.SLURM_ALONE);
        assertEquals(100, outcome(run, "head").startSecond(), 1e-9);
        assertEquals(150, outcome(run, "c").startSecond(), 1e-9);
    }

    @Test
    void aLongJobMayStartOnANodeTheReservationDoesNotNeed() {
        Workload workload = new Workload(
                "two nodes",
                nodes(2, 4),
                List.of(
                        job("a", 0, 3, 100, 100),
                        job("b", 0, 2, 300, 300),
                        job("head", 1, 4, 50, 100),
                        job("c", 2, 1, 40, 500)));
        PolicyRun run = run(workload, Policy.SLURM_ALONE);
        // head is reserved n1 at 100 (b holds n2 until 300); c goes to n2 at once, or to n1's spare GPU
        assertEquals(100, outcome(run, "head").startSecond(), 1e-9);
        assertEquals(2, outcome(run, "c").startSecond(), 1e-9);
    }

    @Test
    void jobsOfTheSameSizeStartInSubmitOrder() {
        Workload workload = sameSizeJobs();
        PolicyRun run = run(workload, Policy.SLURM_ALONE);
        assertEquals(100, outcome(run, "b").startSecond(), 1e-9);
        assertEquals(110, outcome(run, "c").startSecond(), 1e-9);
    }

    @Test
    void withABackfillIntervalAJobThatOnlyBackfillStartsWaitsForTheNextCycle() {
        // cycles at 5, 35, 65, ...: c (submitted at 2) is started by the cycle at 5, not when it arrives
        PolicyRun run = new Simulator(OverheadModel.measured(), new BackfillSettings(30, 5, false))
                .run(behindAReservation(90), Policy.SLURM_ALONE, fraction -> {});
        assertEquals(5, outcome(run, "c").startSecond(), 1e-9);
        assertEquals(100, outcome(run, "head").startSecond(), 1e-9);
    }

    @Test
    void withABackfillIntervalJobsInPriorityOrderStillStartAtOnce() {
        Workload workload = sameSizeJobs();
        PolicyRun run = new Simulator(OverheadModel.measured(), new BackfillSettings(30, 17, false))
                .run(workload, Policy.SLURM_ALONE, fraction -> {});
        assertEquals(0, outcome(run, "a").startSecond(), 1e-9);
        assertEquals(100, outcome(run, "b").startSecond(), 1e-9);
        assertEquals(110, outcome(run, "c").startSecond(), 1e-9);
    }

    @Test
    void aBackfillCycleComesAfterTheLastOneAnIntervalOn() {
        BackfillSettings cadence = new BackfillSettings(30, 5, false);
        assertTrue(cadence.backfillsAt(65));
        assertFalse(cadence.backfillsAt(64.5));
        assertEquals(65, cadence.nextBackfillAfter(36), 1e-9);
        assertEquals(5, cadence.nextBackfillAfter(-3), 1e-9);
        assertTrue(BackfillSettings.EASY_EVERY_PASS.backfillsAt(12.3));
    }
}
