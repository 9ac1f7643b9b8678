package org.vgpu.simulator.engine;

import java.util.ArrayList;
import java.util.List;

import org.vgpu.simulator.workload.SimJob;

/**
 * A job from its allocation to its end: where its vGPUs are, and how far its work has got.
 *
 * <p>Its work is its native run time. It progresses at rate 1 while all its vGPUs are local, at 1 / slowdown while
 * any is remote (one remote vGPU makes every step wait on the network), and not at all while a move blocks it.
 * Slurm kills it at its start plus its time limit, done or not.
 */
final class RunningJob {
    /** A borrowed vGPU: which vGPU of the job, and the lender's GPU it runs on. */
    record Remote(int vgpu, NodeState lender, int gpu, Hold hold) {}

    final int index;
    final SimJob job;
    final NodeState host;
    final Hold hostHold;
    final List<Integer> localGpus = new ArrayList<>();
    final List<Remote> remotes = new ArrayList<>();
    final int borrowedAtStart;
    /** How much slower it runs while remote, in this run. */
    private final double slowdown;
    /** How much slower the overhead model measured it runs while remote: what its agent's counters tell the hook. */
    private final double measuredSlowdown;
    /** When it starts running: its allocation plus, for a borrowing job, the start-up of its holders and workers. */
    final double start;

    private double remainingWork;
    private double lastUpdate;
    double remoteGpuSeconds;
    /** Remote waiting so far, as the job's agent would report it to the hook. */
    private double remoteWaitSeconds;

    int migrations;
    /** The vGPU being moved home, or -1. */
    int migratingVgpu = -1;
    /** Bumped on every change of its end time, so that an end event scheduled before is known stale. */
    int version;

    boolean ended;

    RunningJob(
            int index,
            SimJob job,
            NodeState host,
            int localGpuCount,
            int borrowed,
            double start,
            double slowdown,
            double measuredSlowdown) {
        this.index = index;
        this.job = job;
        this.host = host;
        this.hostHold = new Hold(this, localGpuCount, job.cpus());
        this.borrowedAtStart = borrowed;
        this.start = start;
        this.slowdown = slowdown;
        this.measuredSlowdown = measuredSlowdown;
        this.remainingWork = job.runSeconds();
        this.lastUpdate = start;
    }

    /** The latest it can end: Slurm kills it at its time limit. */
    double limitEnd() {
        return start + job.timeLimitSeconds();
    }

    boolean migrating() {
        return migratingVgpu >= 0;
    }

    /** Brings its work and remote counters up to {@code now}; nothing happens before it starts. */
    void advance(double now) {
        if (now <= lastUpdate) {
            return;
        }
        double elapsed = now - lastUpdate;
        lastUpdate = now;
        remoteGpuSeconds += elapsed * remotes.size();
        if (migrating()) {
            return;
        }
        if (remotes.isEmpty()) {
            remainingWork -= elapsed;
        } else {
            remainingWork -= elapsed / slowdown;
            remoteWaitSeconds += elapsed * (1 - 1 / measuredSlowdown);
        }
        remainingWork = Math.max(0, remainingWork);
    }

    /** When it ends if nothing changes from {@code now} on, its time limit included; call after {@link #advance}. */
    double endTime(double now) {
        double natural;
        if (migrating()) {
            natural = Double.POSITIVE_INFINITY;
        } else {
            double rate = remotes.isEmpty() ? 1 : 1 / slowdown;
            natural = Math.max(now, start) + remainingWork / rate;
        }
        return Math.min(natural, limitEnd());
    }

    /** Whether it ends before its work is done, killed at its time limit. */
    boolean killedAt(double now) {
        return remainingWork > 1e-9 && now >= limitEnd();
    }

    double remoteWaitSeconds() {
        return remoteWaitSeconds;
    }
}
