package org.vgpu.tracker.placement;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import org.vgpu.common.net.Endpoint;
import org.vgpu.siteconfig.Distances;
import org.vgpu.siteconfig.Policy;
import org.vgpu.tracker.cluster.ClusterView;
import org.vgpu.tracker.cluster.NodeView;
import org.vgpu.tracker.slurm.SlurmJob;

class AssemblyPlannerTest {
    private static final Instant NOW = Instant.parse("2026-11-21T12:00:00Z");
    private static final Duration GRACE = Duration.ofSeconds(30);
    private static final Instant LONG_IDLE = NOW.minusSeconds(600);
    private static final Instant JUST_FREED = NOW.minusSeconds(5);
    private static final Policy BORROWING = new Policy(GRACE, 4, true, false);
    private static final Distances DISTANCES = new Distances(Map.of(
            Distances.NodePair.of("n1", "n2"),
            1,
            Distances.NodePair.of("n1", "n3"),
            2,
            Distances.NodePair.of("n2", "n3"),
            1));

    private final AssemblyPlanner planner = new AssemblyPlanner(BORROWING, DISTANCES, "lend");

    @Test
    void aNodeWithEnoughIdleGpusTakesTheWholeJobAndTheSmallestSuchHoleWins() {
        Availability free = free(node("n1", 4, LONG_IDLE), node("n2", 3, LONG_IDLE), node("n3", 1, LONG_IDLE));

        Placement.Plan plan = assertInstanceOf(Placement.Plan.class, planner.plan(job(7, 3), free));

        assertEquals(new Placement.Plan(7, "n2", 3, List.of()), plan);
        assertEquals(0, free.node("n2").orElseThrow().gpus());
        assertEquals(4, free.node("n1").orElseThrow().gpus());
    }

    @Test
    void oneIdleGpuPerNodeGivesOneLocalAndTwoBorrowedNearestFirst() {
        Availability free = free(node("n1", 1, LONG_IDLE), node("n2", 1, LONG_IDLE), node("n3", 1, LONG_IDLE));

        Placement.Plan plan = assertInstanceOf(Placement.Plan.class, planner.plan(job(7, 3), free));

        assertEquals("n1", plan.node());
        assertEquals(1, plan.localGpus());
        assertEquals(List.of("n2", "n3"), plan.lenders());
        for (String node : List.of("n1", "n2", "n3")) {
            assertEquals(0, free.node(node).orElseThrow().gpus(), node);
        }
        assertEquals(7, free.node("n2").orElseThrow().cpus(), "a holder takes one CPU of its lender");
    }

    @Test
    void gpusIdleForLessThanTheGracePeriodAreNotLent() {
        Availability free = free(node("n1", 1, LONG_IDLE), node("n2", 1, JUST_FREED), node("n3", 1, JUST_FREED));

        Placement.Wait wait = assertInstanceOf(Placement.Wait.class, planner.plan(job(7, 3), free));

        assertTrue(wait.reason().contains("other nodes can lend 0 (idle for 30s"), wait.reason());
        assertEquals(1, free.node("n1").orElseThrow().gpus(), "a job that waits takes nothing");
    }

    @Test
    void withBorrowingOffTheJobWaitsForOneNodeWithEnoughGpusAndSaysSo() {
        AssemblyPlanner localOnly = new AssemblyPlanner(new Policy(GRACE, 4, false, false), DISTANCES, "lend");
        Availability free = free(node("n1", 2, LONG_IDLE), node("n2", 1, LONG_IDLE), node("n3", 1, LONG_IDLE));

        Placement.Wait wait = assertInstanceOf(Placement.Wait.class, localOnly.plan(job(7, 3), free));

        assertEquals("waiting for a node with 3 idle GPUs (most now: 2 on n1); borrowing is off", wait.reason());
    }

    @Test
    void theBorrowLimitIsKept() {
        AssemblyPlanner limited = new AssemblyPlanner(new Policy(GRACE, 1, true, false), DISTANCES, "lend");
        Availability free = free(node("n1", 1, LONG_IDLE), node("n2", 2, LONG_IDLE), node("n3", 1, LONG_IDLE));

        Placement.Plan plan = assertInstanceOf(Placement.Plan.class, limited.plan(job(7, 3), free));

        assertEquals("n2", plan.node(), "only n2 needs no more than one borrowed GPU");
        assertEquals(2, plan.localGpus());
        assertEquals(1, plan.lenders().size());
        assertInstanceOf(Placement.Wait.class, limited.plan(job(8, 3), free));
    }

    @Test
    void lendsSpreadOverLendersAtTheSameDistanceAndNeedAFreeCpuEach() {
        Distances flat = new Distances(Map.of(
                Distances.NodePair.of("n1", "n2"),
                1,
                Distances.NodePair.of("n1", "n3"),
                1,
                Distances.NodePair.of("n2", "n3"),
                1));
        AssemblyPlanner planner = new AssemblyPlanner(BORROWING, flat, "lend");
        Availability free = free(
                node("n1", 2, LONG_IDLE),
                node("n2", 2, LONG_IDLE),
                new NodeView(
                        "n3",
                        true,
                        List.of("gpu", "lend"),
                        1,
                        8,
                        idle(3, LONG_IDLE),
                        80L << 30,
                        new Endpoint("n3", 7500)));
        SlurmJob twoCpus =
                new SlurmJob(7, "x", "alice", "PENDING", "JobHeldUser", "gpu", 0, 2, Map.of("vgpu", 5), List.of());

        Placement.Plan plan = assertInstanceOf(Placement.Plan.class, planner.plan(twoCpus, free));

        assertEquals("n1", plan.node(), "n3 has the most idle GPUs but not the job's 2 CPUs");
        assertEquals(
                List.of("n2", "n3", "n2"), plan.lenders(), "spread over lenders; n3 has one free CPU, for one holder");
    }

    @Test
    void jobsPlannedInOnePassNeverShareAGpu() {
        Availability free = free(node("n1", 1, LONG_IDLE), node("n2", 1, LONG_IDLE), node("n3", 1, LONG_IDLE));

        assertInstanceOf(Placement.Plan.class, planner.plan(job(7, 2), free));
        assertInstanceOf(Placement.Plan.class, planner.plan(job(8, 1), free));
        Placement.Wait third = assertInstanceOf(Placement.Wait.class, planner.plan(job(9, 1), free));

        assertTrue(third.reason().startsWith("waiting for 1 GPUs"), third.reason());
    }

    @Test
    void unschedulableNodesOtherPartitionsAndMixedRequestsAreNotPlanned() {
        NodeView drained =
                new NodeView("n1", false, List.of("gpu", "lend"), 8, 8, idle(4, LONG_IDLE), 1, new Endpoint("n1", 1));
        NodeView otherPartition =
                new NodeView("n2", true, List.of("cpu"), 8, 8, idle(4, LONG_IDLE), 1, new Endpoint("n2", 1));
        Availability free = free(drained, otherPartition);

        Placement.Wait wait = assertInstanceOf(Placement.Wait.class, planner.plan(job(7, 1), free));
        assertEquals("no node of partition gpu has 1 free CPU(s) and 1 free vgpu slot(s)", wait.reason());

        SlurmJob mixed = new SlurmJob(
                8, "x", "alice", "PENDING", "JobHeldUser", "gpu", 0, 1, Map.of("gpu", 1, "vgpu", 2), List.of());
        Placement.Wait mixedWait =
                assertInstanceOf(Placement.Wait.class, planner.plan(mixed, free(node("n3", 4, LONG_IDLE))));
        assertTrue(mixedWait.reason().startsWith("asks for gpu:1 as well as vgpu:2"), mixedWait.reason());
    }

    private static SlurmJob job(long id, int vgpus) {
        return new SlurmJob(
                id, "job" + id, "alice", "PENDING", "JobHeldUser", "gpu", 0, 1, Map.of("vgpu", vgpus), List.of());
    }

    private static NodeView node(String name, int idleGpus, Instant idleSince) {
        return new NodeView(
                name,
                true,
                List.of("gpu", "lend"),
                8,
                8,
                idle(idleGpus, idleSince),
                80L << 30,
                new Endpoint(name, 7500));
    }

    private static Map<Integer, Instant> idle(int count, Instant since) {
        Map<Integer, Instant> idle = new HashMap<>();
        for (int gpu = 0; gpu < count; gpu++) {
            idle.put(4 - count + gpu, since);
        }
        return idle;
    }

    private static Availability free(NodeView... nodes) {
        return new Availability(new ClusterView(NOW, List.of(nodes)), GRACE);
    }
}
