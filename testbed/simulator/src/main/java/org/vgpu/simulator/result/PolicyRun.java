package org.vgpu.simulator.result;

import java.util.List;
import java.util.Objects;

/**
 * One policy's run of a workload: every job's outcome, and what the tracker's own code cost doing it.
 *
 * @param busyGpuSeconds GPU-seconds that some job held
 * @param totalGpus the cluster's GPUs
 * @param makespanSeconds from the first submit to the last end
 * @param passes the tracker's passes: its planner's (at most one per poll) and its hook's looks at a node; 0 under
 *     Slurm alone
 * @param plannerNanos time the tracker's planner took over all passes
 * @param hookNanos time the tracker's hook (its move policy) took over all passes
 */
public record PolicyRun(
        Policy policy,
        List<JobOutcome> jobs,
        double busyGpuSeconds,
        int totalGpus,
        double makespanSeconds,
        long passes,
        long plannerNanos,
        long hookNanos) {
    public PolicyRun {
        Objects.requireNonNull(policy, "policy");
        jobs = List.copyOf(jobs);
    }

    public double gpuUtilisation() {
        return totalGpus == 0 || makespanSeconds <= 0 ? 0 : busyGpuSeconds / (totalGpus * makespanSeconds);
    }
}
