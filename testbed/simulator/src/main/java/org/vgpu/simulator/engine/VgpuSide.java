package org.vgpu.simulator.engine;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.stream.Collectors;

import org.vgpu.siteconfig.Distances;
import org.vgpu.tracker.cluster.ClusterView;
import org.vgpu.tracker.cluster.NodeView;
import org.vgpu.tracker.hook.MovePolicy;
import org.vgpu.tracker.placement.AssemblyPlanner;
import org.vgpu.tracker.placement.Availability;
import org.vgpu.tracker.placement.Placement;
import org.vgpu.tracker.slurm.SlurmJob;

/**
 * The tracker's own code seen from the simulation: it turns the simulated cluster into the views the tracker
 * builds from Slurm ({@link ClusterView}, {@link NodeView}, a held {@link SlurmJob}), asks its {@link
 * AssemblyPlanner} for assemblies and its hook's {@link MovePolicy} for moves home, with the site's policy (idle
 * grace, most GPUs borrowed per job, migration cost model and hysteresis; the defaults unless a site configuration
 * was given), and times both.
 */
final class VgpuSide {
    /** The one partition of the simulated cluster, which every node lends in. */
    static final String PARTITION = "gpu";

    private final org.vgpu.siteconfig.Policy sitePolicy;
    private final double pollSeconds;
    private final AssemblyPlanner planner;
    private final MovePolicy movePolicy;
    private final OverheadModel measured;
    private long plannerNanos;
    private long hookNanos;

    VgpuSide(Cluster cluster, OverheadModel measured, TrackerSettings tracker) {
        this.sitePolicy = tracker.sitePolicy();
        this.pollSeconds = tracker.pollSeconds();
        this.measured = measured;
        Set<String> names = new java.util.HashSet<>();
        for (int i = 0; i < cluster.size(); i++) {
            names.add(cluster.node(i).node.name());
        }
        // A flat network: every pair of nodes at one distance, so lenders go by the planner's other rules.
        this.planner = new AssemblyPlanner(sitePolicy, new Distances(names, Map.of(), OptionalInt.of(1)), PARTITION);
        this.movePolicy = new MovePolicy(sitePolicy.migration());
    }

    /** How often the tracker plans. */
    double pollSeconds() {
        return pollSeconds;
    }

    Duration idleGrace() {
        return sitePolicy.idleGrace();
    }

    /** Whether the planner could possibly assemble {@code gpus} GPUs now: a cheap test before building its views. */
    boolean mightAssemble(int gpus, Cluster cluster) {
        return cluster.freeGpus() >= gpus && gpus - cluster.mostFreeGpus() <= sitePolicy.maxBorrowedPerJob();
    }

    /** What the tracker sees free at {@code now}: the nodes with an idle GPU, through its own idle clock's times. */
    Availability availability(Cluster cluster, double now) {
        long began = System.nanoTime();
        List<NodeView> views = new ArrayList<>();
        for (NodeState node : cluster.nodesWithFreeGpus()) {
            views.add(node.view(PARTITION));
        }
        Availability availability = new Availability(new ClusterView(Simulation.instant(now), views), idleGrace());
        plannerNanos += System.nanoTime() - began;
        return availability;
    }

    /** The planner's answer for a waiting job, taken from {@code free} as the tracker's pass does. */
    Placement plan(int index, int gpus, int cpus, Availability free) {
        long began = System.nanoTime();
        SlurmJob held = new SlurmJob(
                index,
                "job" + index,
                "",
                "PENDING",
                "JobHeldUser",
                PARTITION,
                0,
                cpus,
                Map.of(SlurmJob.VGPU, gpus),
                List.of());
        Placement placement = planner.plan(held, free);
        plannerNanos += System.nanoTime() - began;
        return placement;
    }

    /**
     * The hook's decision for a job whose node has free GPUs: its agent's counters say the remote waiting the
     * measured overhead model gives, shared evenly by its remote vGPUs, and the live state of its class.
     */
    MovePolicy.Decision decide(RunningJob job, double now) {
        long began = System.nanoTime();
        long liveBytes = (long) (measured.stateGib(job.job.workloadClass()) * (1L << 30));
        long waitMillis = Math.round(job.remoteWaitSeconds() * 1000 / Math.max(1, job.remotes.size()));
        List<MovePolicy.Candidate> candidates = job.remotes.stream()
                .map(remote -> new MovePolicy.Candidate(
                        remote.vgpu(), Optional.of(new MovePolicy.Counters(waitMillis, liveBytes)), Optional.empty()))
                .collect(Collectors.toList());
        MovePolicy.Situation situation = new MovePolicy.Situation(
                Simulation.instant(now),
                Duration.ofMillis(Math.round((now - job.start) * 1000)),
                Optional.of(Duration.ofSeconds(job.job.timeLimitSeconds())),
                Optional.empty(),
                job.host.freeGpuIndices(),
                job.migrating(),
                candidates);
        MovePolicy.Decision decision = movePolicy.decide(situation);
        hookNanos += System.nanoTime() - began;
        return decision;
    }

    long plannerNanos() {
        return plannerNanos;
    }

    long hookNanos() {
        return hookNanos;
    }
}
