package org.vgpu.simulator.engine;

import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.SequencedSet;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.Workload;
import org.vgpu.tracker.hook.MovePolicy;
import org.vgpu.tracker.placement.Availability;
import org.vgpu.tracker.placement.Placement;

/**
 * One policy's run of one workload: the event loop. At each instant it applies that instant's events (ends, moves
 * done, submits), then, if GPUs were freed or jobs arrived, one scheduling pass: Slurm's own (priority order and EASY
 * backfill), then, with borrowing and at most once per tracker poll, the tracker's planner for the jobs no node can
 * hold; then the hook's looks due at that instant. Slurm backfills at the passes its {@link BackfillSettings} allows,
 * and wakes for the next backfill cycle when a job waits behind one that cannot start.
 * A borrowing job holds its GPUs from its plan and runs after the start-up delay; the hook looks at a node's jobs
 * its detection latency after a GPU there frees.
 */
final class Simulation {
    private final Policy policy;
    private final SimJob[] jobs;
    private final OverheadModel overheads;
    private final OverheadModel measured;
    private final Cluster cluster;
    private final Map<String, NodeState> byName = new HashMap<>();
    private final EventQueue events = new EventQueue();
    private final SequencedSet<Integer> waiting = new LinkedHashSet<>();
    private final BackfillScheduler slurm;
    private final BackfillSettings backfillSettings;
    /** The tracker's own code; null under Slurm alone. */
    private final VgpuSide vgpu;

    private final boolean hook;
    private final RunningJob[] running;
    private final RunAccounting books;
    private double lastWake = Double.NEGATIVE_INFINITY;
    private double nextTrackerPass = Double.NEGATIVE_INFINITY;
    /** The backfill cycle a wake-up is already queued for. */
    private double backfillWake = Double.NEGATIVE_INFINITY;

    Simulation(
            Workload workload,
            Policy policy,
            OverheadModel measured,
            BackfillSettings backfillSettings,
            TrackerSettings tracker,
            java.util.function.DoubleConsumer progress) {
        this.policy = policy;
        this.backfillSettings = backfillSettings;
        this.jobs = workload.jobs().toArray(SimJob[]::new);
        this.measured = measured;
        this.overheads = policy == Policy.VGPU_NO_OVERHEAD ? measured.free() : measured;
        this.cluster = new Cluster(workload.nodes());
        for (int i = 0; i < cluster.size(); i++) {
            byName.put(cluster.node(i).node.name(), cluster.node(i));
        }
        this.slurm = new BackfillScheduler(jobs);
        this.vgpu = policy == Policy.SLURM_ALONE ? null : new VgpuSide(cluster, measured, tracker);
        this.hook = policy == Policy.VGPU || policy == Policy.VGPU_NO_OVERHEAD;
        this.running = new RunningJob[jobs.length];
        this.books = new RunAccounting(jobs.length, jobs.length == 0 ? 0 : jobs[0].submitSecond(), progress);
    }

    /** Simulation time (seconds from the workload's start) as the instant the tracker's code works with. */
    static Instant instant(double seconds) {
        return Instant.EPOCH.plusMillis(Math.round(seconds * 1000));
    }

    PolicyRun run() {
        int next = 0;
        while (next < jobs.length || !events.isEmpty()) {
            double now = Math.min(
                    events.nextTime(), next < jobs.length ? jobs[next].submitSecond() : Double.POSITIVE_INFINITY);
            cluster.advanceTo(now);
            while (next < jobs.length && jobs[next].submitSecond() == now) {
                events.add(now, EventQueue.Kind.SUBMIT, next++, -1, 0);
            }
            boolean freedOrArrived = false;
            while (events.beforePassAt(now)) {
                freedOrArrived |= handle(events.poll(), now);
            }
            if (freedOrArrived && !waiting.isEmpty()) {
                schedule(now);
            }
            while (events.nextTime() == now && !events.beforePassAt(now)) {
                handle(events.poll(), now);
            }
        }
        return books.finish(policy, cluster, vgpu);
    }

    /** Applies one event; true when it freed GPUs or added a job, so that a scheduling pass is due. */
    private boolean handle(EventQueue.Event event, double now) {
        RunningJob job = event.job() >= 0 ? running[event.job()] : null;
        return switch (event.kind()) {
            case SUBMIT -> waiting.add(event.job());
            case END -> {
                if (job == null || job.ended || job.version != event.version()) {
                    yield false;
                }
                end(job, now);
                yield true;
            }
            case MIGRATION_DONE -> {
                if (job == null || job.ended) {
                    yield false;
                }
                migrationDone(job, now);
                yield true;
            }
            case HOOK -> {
                look(cluster.node(event.node()), now);
                yield false;
            }
            case WAKE -> true;
        };
    }

    private void schedule(double now) {
        boolean backfill = backfillSettings.backfillsAt(now);
        boolean leftForBackfill = slurm.pass(
                now,
                cluster,
                waiting,
                backfill,
                backfillSettings.reserveEveryJob(),
                (index, node) -> start(index, node, jobs[index].gpus(), List.of(), now));
        if (leftForBackfill) {
            double cycle = backfillSettings.nextBackfillAfter(now);
            if (cycle > backfillWake) {
                backfillWake = cycle;
                events.add(cycle, EventQueue.Kind.WAKE, -1, -1, 0);
            }
        }
        if (vgpu != null && !waiting.isEmpty()) {
            if (now >= nextTrackerPass) {
                nextTrackerPass = now + vgpu.pollSeconds();
                trackerPass(now);
            } else {
                wake(nextTrackerPass);
            }
        }
    }

    /**
     * The tracker's pass: its planner, for the waiting jobs that no node can hold now. Once a job of G GPUs and C
     * CPUs got no plan, a later one asking at least as much of both gets none either (what is free only shrinks in a
     * pass), so the planner is not asked again for it.
     */
    private void trackerPass(double now) {
        books.pass();
        Availability free = null;
        List<SimJob> refused = new ArrayList<>();
        int looked = 0;
        for (Iterator<Integer> it = waiting.iterator(); it.hasNext() && looked < BackfillScheduler.WINDOW; looked++) {
            int index = it.next();
            SimJob job = jobs[index];
            if (!job.mayBorrow()
                    || cluster.bestFit(job.gpus(), job.cpus(), null).isPresent()
                    || !vgpu.mightAssemble(job.gpus(), cluster)
                    || refused.stream().anyMatch(other -> other.gpus() <= job.gpus() && other.cpus() <= job.cpus())) {
                continue;
            }
            if (free == null) {
                free = vgpu.availability(cluster, now);
            }
            Placement placement = vgpu.plan(index, job.gpus(), job.cpus(), free);
            if (placement instanceof Placement.Wait) {
                refused.add(job);
            }
            if (placement instanceof Placement.Plan plan) {
                it.remove();
                List<NodeState> lenders =
                        plan.lenders().stream().map(byName::get).toList();
                start(index, byName.get(plan.node()), plan.localGpus(), lenders, now);
            }
        }
    }

    private void start(int index, NodeState host, int localGpus, List<NodeState> lenders, double now) {
        SimJob job = jobs[index];
        double start = now + (lenders.isEmpty() ? 0 : overheads.startupSeconds());
        RunningJob run = new RunningJob(
                index,
                job,
                host,
                localGpus,
                lenders.size(),
                start,
                overheads.slowdown(job.workloadClass()),
                measured.slowdown(job.workloadClass()));
        running[index] = run;
        run.localGpus.addAll(cluster.takeGpus(host, localGpus, now));
        host.takeCpusAndSlots(job.cpus(), job.gpus());
        host.hold(run.hostHold);
        host.hosted.add(run);
        for (NodeState lender : lenders) {
            int gpu = cluster.takeGpus(lender, 1, now).getFirst();
            lender.takeCpusAndSlots(1, 0);
            Hold lend = new Hold(run, 1, 1);
            lender.hold(lend);
            run.remotes.add(new RunningJob.Remote(localGpus + run.remotes.size(), lender, gpu, lend));
        }
        events.add(run.endTime(now), EventQueue.Kind.END, index, -1, run.version);
    }

    private void end(RunningJob job, double now) {
        job.advance(now);
        job.ended = true;
        NodeState host = job.host;
        for (int gpu : job.localGpus) {
            cluster.releaseGpu(host, gpu, now);
        }
        host.takeCpusAndSlots(-job.job.cpus(), -job.job.gpus());
        host.holds.remove(job.hostHold);
        host.hosted.remove(job);
        List<NodeState> freed = new ArrayList<>();
        freed.add(host);
        for (RunningJob.Remote remote : job.remotes) {
            giveBack(remote, now);
            freed.add(remote.lender());
        }
        books.ended(job, now);
        freed.forEach(node -> released(node, now));
    }

    private void giveBack(RunningJob.Remote remote, double now) {
        NodeState lender = remote.lender();
        cluster.releaseGpu(lender, remote.gpu(), now);
        lender.takeCpusAndSlots(-1, 0);
        lender.holds.remove(remote.hold());
    }

    /**
     * After GPUs of {@code node} were freed: the hook looks at the node's borrowing jobs after its detection latency,
     * and the tracker plans again once the freed GPUs are past their idle grace and may be lent.
     */
    private void released(NodeState node, double now) {
        if (hook && node.hostsBorrowers()) {
            events.add(now + overheads.hookLatencySeconds(), EventQueue.Kind.HOOK, -1, node.index, 0);
        }
        if (vgpu != null) {
            wake(now + vgpu.idleGrace().toMillis() / 1000.0);
        }
    }

    /** A scheduling pass at {@code time}, unless one is due then or later already. */
    private void wake(double time) {
        if (time > lastWake) {
            lastWake = time;
            events.add(time, EventQueue.Kind.WAKE, -1, -1, 0);
        }
    }

    /** The hook at one node: each borrowing job there, while the node has a free GPU, asks the move policy. */
    private void look(NodeState node, double now) {
        books.pass();
        for (RunningJob job : List.copyOf(node.hosted)) {
            if (job.remotes.isEmpty() || job.migrating() || node.freeGpuCount() == 0) {
                continue;
            }
            job.advance(now);
            if (vgpu.decide(job, now) instanceof MovePolicy.Decision.Move move) {
                cluster.takeGpu(node, move.gpu(), now);
                job.localGpus.add(move.gpu());
                job.hostHold.gpus++;
                job.migratingVgpu = move.vgpu();
                job.version++;
                events.add(job.endTime(now), EventQueue.Kind.END, job.index, -1, job.version);
                events.add(
                        now + overheads.migrationBlockedSeconds(job.job.workloadClass()),
                        EventQueue.Kind.MIGRATION_DONE,
                        job.index,
                        -1,
                        0);
            }
        }
    }

    /** A move home is done: the job runs on, and the lender's GPU is free. */
    private void migrationDone(RunningJob job, double now) {
        job.advance(now);
        RunningJob.Remote moved = job.remotes.stream()
                .filter(remote -> remote.vgpu() == job.migratingVgpu)
                .findFirst()
                .orElseThrow();
        job.remotes.remove(moved);
        job.migratingVgpu = -1;
        job.migrations++;
        giveBack(moved, now);
        job.version++;
        events.add(job.endTime(now), EventQueue.Kind.END, job.index, -1, job.version);
        released(moved.lender(), now);
        if (!job.remotes.isEmpty() && job.host.freeGpuCount() > 0) {
            events.add(now, EventQueue.Kind.HOOK, -1, job.host.index, 0);
        }
    }
}
