package org.vgpu.simulator.report;

import java.util.Arrays;
import java.util.List;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;

/**
 * One policy's run in the figures the comparison shows. Percentiles are nearest-rank (the p-th percentile is the
 * smallest wait that at least p % of the jobs do not exceed); the borrowers' slowdown is {@link Double#NaN} when no
 * job borrowed.
 *
 * @param meanBorrowerSlowdown the mean slowdown ({@link JobOutcome#slowdown()}) of the jobs that borrowed
 * @param jobsKilledAtTimeLimit jobs Slurm killed at their time limit before their work was done, which the slowdown of
 *     remote GPUs can cause
 */
public record PolicySummary(
        Policy policy,
        int jobs,
        double meanWaitSeconds,
        double medianWaitSeconds,
        double p95WaitSeconds,
        double meanBoundedSlowdown,
        double meanBorrowerSlowdown,
        double gpuUtilisation,
        int jobsThatBorrowed,
        long migrations,
        double remoteGpuHours,
        int jobsKilledAtTimeLimit) {

    public static PolicySummary of(PolicyRun run) {
        List<JobOutcome> jobs = run.jobs();
        double[] waits =
                jobs.stream().mapToDouble(JobOutcome::waitSeconds).sorted().toArray();
        List<JobOutcome> borrowers =
                jobs.stream().filter(job -> job.borrowedGpus() > 0).toList();
        return new PolicySummary(
                run.policy(),
                jobs.size(),
                mean(waits),
                percentile(waits, 50),
                percentile(waits, 95),
                jobs.stream().mapToDouble(JobOutcome::boundedSlowdown).average().orElse(Double.NaN),
                borrowers.stream().mapToDouble(JobOutcome::slowdown).average().orElse(Double.NaN),
                run.gpuUtilisation(),
                borrowers.size(),
                jobs.stream().mapToLong(JobOutcome::migrations).sum(),
                jobs.stream().mapToDouble(JobOutcome::remoteGpuSeconds).sum() / 3_600,
                (int) jobs.stream().filter(JobOutcome::killedAtTimeLimit).count());
    }

    /** Nearest rank of sorted values: the smallest value at least {@code percent} % of them do not exceed. */
    static double percentile(double[] sorted, double percent) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(percent / 100 * sorted.length);
        return sorted[Math.clamp(rank - 1, 0, sorted.length - 1)];
    }

    private static double mean(double[] values) {
        return Arrays.stream(values).average().orElse(Double.NaN);
    }
}
