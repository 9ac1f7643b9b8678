package org.vgpu.simulator.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.simulator.engine.SmallClusters.job;
import static org.vgpu.simulator.engine.SmallClusters.meanWait;
import static org.vgpu.simulator.engine.SmallClusters.nodes;
import static org.vgpu.simulator.engine.SmallClusters.outcome;
import static org.vgpu.simulator.engine.SmallClusters.run;
import static org.vgpu.simulator.engine.SmallClusters.scattered;

import java.util.List;
import java.util.OptionalLong;

import org.junit.jupiter.api.Test;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.SimNode;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.simulator.workload.WorkloadClass;

class BorrowingTest {
    private static final double STARTUP = 9;
    private static final double MD_SLOWDOWN = 1.73;

    @Test
    void underSlurmAloneAJobWaitsForOneNodeToHaveAllItsGpus() {
        JobOutcome x = outcome(run(scattered(), Policy.SLURM_ALONE), "x");
        assertEquals(200, x.startSecond(), 1e-9);
        assertEquals(0, x.borrowedGpus());
        assertEquals(0, x.remoteGpuSeconds(), 1e-9);
    }

    @Test
    void withBorrowingItStartsAtOnceAfterTheStartUpOnItsOwnIdleGpuAndTwoLent() {
        for (Policy policy : List.of(Policy.BORROW_ONLY, Policy.VGPU)) {
            JobOutcome x = outcome(run(scattered(), policy), "x");
            assertEquals(100 + STARTUP, x.startSecond(), 1e-9, policy.shortName());
            assertEquals(2, x.borrowedGpus(), policy.shortName());
        }
    }

    @Test
    void aJobThatMayNotBorrowWaitsForItsNodeUnderEveryPolicy() {
        SimJob plain = job("x", 100, 3, 3000, 10_000);
        SimJob notVgpu = new SimJob(
                plain.id(),
                plain.submitSecond(),
                plain.gpus(),
                plain.cpus(),
                plain.timeLimitSeconds(),
                plain.runSeconds(),
                plain.user(),
                plain.workloadClass(),
                plain.recordedStartSecond(),
                false);
        for (Policy policy : Policy.values()) {
            JobOutcome x = outcome(run(scattered(200, notVgpu), policy), "x");
            assertEquals(200, x.startSecond(), 1e-9, policy.shortName());
            assertEquals(0, x.borrowedGpus(), policy.shortName());
        }
    }

    @Test
    void theSitesIdleGraceAndTheTrackersPollDecideWhenAFreedGpuIsLent() {
        // on each of two nodes one GPU frees at 100, and a 2-GPU job arrives at 101: it gets n1's at once and borrows
        // n2's once that has been idle for the site's grace, at 130 with the default 30 s, at 102 with the testbed's 2
        // s
        Workload workload = new Workload(
                "freshly freed",
                nodes(2, 4),
                List.of(
                        job("f1", 0, 3, 5000, 5000),
                        job("f1b", 0, 1, 100, 100),
                        job("f2", 0, 3, 5000, 5000),
                        job("f2b", 0, 1, 100, 100),
                        job("x", 101, 2, 3000, 10_000)));
        JobOutcome byDefault = outcome(run(workload, Policy.BORROW_ONLY), "x");
        org.vgpu.siteconfig.Policy twoSeconds =
                new org.vgpu.siteconfig.Policy(java.time.Duration.ofSeconds(2), 4, true, false);
        JobOutcome testbed = outcome(
                new Simulator(
                                OverheadModel.measured(),
                                BackfillSettings.EASY_EVERY_PASS,
                                new TrackerSettings(twoSeconds, 1))
                        .run(workload, Policy.BORROW_ONLY, fraction -> {}),
                "x");
        assertEquals(1, byDefault.borrowedGpus());
        assertEquals(1, testbed.borrowedGpus());
        assertEquals(130 + STARTUP, byDefault.startSecond(), 1e-9);
        assertEquals(102 + STARTUP, testbed.startSecond(), 1e-9);
    }

    @Test
    void borrowedGpusStayRemoteToTheEndWithoutTheHook() {
        JobOutcome x = outcome(run(scattered(), Policy.BORROW_ONLY), "x");
        assertEquals(0, x.migrations());
        assertEquals(100 + STARTUP + 3000 * MD_SLOWDOWN, x.endSecond(), 1e-6);
        assertEquals(2 * 3000 * MD_SLOWDOWN, x.remoteGpuSeconds(), 1e-6);
    }

    @Test
    void theHookMovesBorrowedGpusHomeWhenTheJobsNodeFreesGpus() {
        PolicyRun borrowOnly = run(scattered(), Policy.BORROW_ONLY);
        PolicyRun vgpu = run(scattered(), Policy.VGPU);
        JobOutcome x = outcome(vgpu, "x");
        assertEquals(2, x.migrations());
        assertTrue(x.remoteGpuSeconds() < outcome(borrowOnly, "x").remoteGpuSeconds() / 10, x.toString());
        // remote from 109 until the hook's look 1 s after f1 ends at 200; each move blocks 0.025 + 0.30 s per GiB
        double remoteRun = 201 - (100 + STARTUP);
        double blocked = 2 * (0.025 + 0.30);
        assertEquals(201 + blocked + (3000 - remoteRun / MD_SLOWDOWN), x.endSecond(), 1e-3);
    }

    @Test
    void theRunCountsTheTrackersPassesAndTheirTimeOnlyWhereTheTrackerRuns() {
        PolicyRun slurm = run(scattered(), Policy.SLURM_ALONE);
        assertEquals(0, slurm.passes());
        assertEquals(0, slurm.plannerNanos() + slurm.hookNanos());
        PolicyRun vgpu = run(scattered(), Policy.VGPU);
        // the planner's pass at 100, the hook's look at 201 and its look again after the first move
        assertEquals(3, vgpu.passes());
        assertTrue(vgpu.plannerNanos() > 0 && vgpu.hookNanos() > 0);
        assertEquals(0, run(scattered(), Policy.BORROW_ONLY).hookNanos());
    }

    @Test
    void withoutOverheadsBorrowingStartsAtOnceAndCostsNothing() {
        JobOutcome x = outcome(run(scattered(), Policy.VGPU_NO_OVERHEAD), "x");
        assertEquals(100, x.startSecond(), 1e-9);
        assertEquals(3000, x.endSecond() - x.startSecond(), 1e-6);
    }

    @Test
    void noIdleGpuIsLentBeforeItsGrace() {
        // n2's and n3's idle GPUs were freed at 90: at 100 they are not lendable yet, at 120 (30 s grace) they are
        Workload workload = new Workload(
                "grace",
                nodes(3, 4),
                List.of(
                        job("f1", 0, 3, 5000, 5000),
                        job("f2", 0, 4, 90, 90),
                        job("g2", 90, 3, 5000, 5000),
                        job("f3", 0, 4, 90, 90),
                        job("g3", 90, 3, 5000, 5000),
                        job("x", 100, 3, 100, 1000)));
        JobOutcome x = outcome(run(workload, Policy.BORROW_ONLY), "x");
        assertEquals(120 + STARTUP, x.startSecond(), 1e-9);
    }

    @Test
    void slurmKillsAJobThatTheSlowdownPushesPastItsTimeLimit() {
        Workload workload = scattered(5000, job("x", 100, 3, 1000, 1200));
        JobOutcome x = outcome(run(workload, Policy.BORROW_ONLY), "x");
        assertEquals(100 + STARTUP, x.startSecond(), 1e-9);
        assertEquals(x.startSecond() + 1200, x.endSecond(), 1e-9);
        assertTrue(x.killedAtTimeLimit());
        assertFalse(outcome(run(workload, Policy.SLURM_ALONE), "x").killedAtTimeLimit());
    }

    @Test
    void withoutOverheadsNoJobWaitsLongerOnAverageThanWithThem() {
        for (long seed = 1; seed <= 5; seed++) {
            Workload workload = SmallClusters.mix(seed, 300);
            double free = meanWait(run(workload, Policy.VGPU_NO_OVERHEAD));
            double vgpu = meanWait(run(workload, Policy.VGPU));
            assertTrue(free <= vgpu, "seed " + seed + ": " + free + " > " + vgpu);
        }
        assertTrue(meanWait(run(scattered(), Policy.VGPU_NO_OVERHEAD)) <= meanWait(run(scattered(), Policy.VGPU)));
    }

    @Test
    void aJobNoNodeCanHoldIsRejectedWithItsName() {
        Workload workload = new Workload("too big", nodes(2, 4), List.of(job("huge", 0, 8, 10, 10)));
        IllegalArgumentException error = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> run(workload, Policy.VGPU));
        assertTrue(error.getMessage().contains("job huge asks 8 GPUs"), error.getMessage());
        Workload cpus = new Workload(
                "too many CPUs",
                List.of(new SimNode("small", 2, 4), new SimNode("wide", 1, 128)),
                List.of(new SimJob("greedy", 0, 2, 64, 10, 10, "", WorkloadClass.UNKNOWN, OptionalLong.empty())));
        error = org.junit.jupiter.api.Assertions.assertThrows(
                IllegalArgumentException.class, () -> run(cpus, Policy.SLURM_ALONE));
        assertTrue(error.getMessage().contains("job greedy asks 2 GPUs and 64 CPUs"), error.getMessage());
    }
}
