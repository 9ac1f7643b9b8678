package org.vgpu.simulator.engine;

import java.util.Arrays;
import java.util.List;
import java.util.function.DoubleConsumer;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;

/** The run's books: each job's outcome as it ends, the share of jobs done for the progress bar, and the totals. */
final class RunAccounting {
    private final JobOutcome[] outcomes;
    private final DoubleConsumer progress;
    private final long firstSubmit;
    private int ended;
    private int reportedPercent = -1;
    private double lastEnd;
    private long passes;

    RunAccounting(int jobs, long firstSubmit, DoubleConsumer progress) {
        this.outcomes = new JobOutcome[jobs];
        this.firstSubmit = firstSubmit;
        this.progress = progress;
        report();
    }

    void ended(RunningJob job, double now) {
        outcomes[job.index] = new JobOutcome(
                job.job.id(),
                job.job.submitSecond(),
                job.start,
                now,
                job.job.gpus(),
                job.borrowedAtStart,
                job.migrations,
                job.remoteGpuSeconds,
                job.job.runSeconds(),
                job.killedAt(now));
        ended++;
        lastEnd = Math.max(lastEnd, now);
        report();
    }

    /** The tracker ran: a planner pass, or a look of the hook at one node. */
    void pass() {
        passes++;
    }

    private void report() {
        int percent = outcomes.length == 0 ? 100 : (int) (100L * ended / outcomes.length);
        if (percent != reportedPercent) {
            reportedPercent = percent;
            progress.accept(percent / 100.0);
        }
    }

    PolicyRun finish(Policy policy, Cluster cluster, VgpuSide vgpu) {
        List<JobOutcome> jobs = Arrays.asList(outcomes);
        if (jobs.contains(null)) {
            throw new IllegalStateException("the simulation ended with jobs that never ran");
        }
        int totalGpus = 0;
        for (int i = 0; i < cluster.size(); i++) {
            totalGpus += cluster.node(i).node.gpus();
        }
        return new PolicyRun(
                policy,
                jobs,
                cluster.busyGpuSeconds(),
                totalGpus,
                outcomes.length == 0 ? 0 : lastEnd - firstSubmit,
                passes,
                vgpu == null ? 0 : vgpu.plannerNanos(),
                vgpu == null ? 0 : vgpu.hookNanos());
    }
}
