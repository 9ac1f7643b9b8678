package org.vgpu.simulator.report;

import org.vgpu.simulator.result.PolicyRun;

/**
 * One policy's figures as the JSON and CSV outputs give them: plain numbers in seconds, fractions and percent,
 * {@code null} where a figure is undefined (no job borrowed; no Slurm-alone run to compare with). Its components
 * are the columns, in this order.
 */
public record ReportRow(
        String policy,
        int jobs,
        Double meanWaitSeconds,
        Double medianWaitSeconds,
        Double p95WaitSeconds,
        Double meanBoundedSlowdown,
        Double meanBorrowerSlowdown,
        Double gpuUtilisation,
        int jobsThatBorrowed,
        long migrations,
        Double remoteGpuHours,
        int jobsKilledAtTimeLimit,
        Double meanWaitChangePercent,
        Double medianWaitChangePercent,
        Double p95WaitChangePercent,
        Double meanBoundedSlowdownChangePercent,
        Double gpuUtilisationChangePercent,
        long schedulingPasses,
        Double plannerMicrosPerPass,
        Double hookMicrosPerPass) {

    static ReportRow of(PolicySummary summary, PolicyRun run, PolicySummary base) {
        return new ReportRow(
                summary.policy().shortName(),
                summary.jobs(),
                number(summary.meanWaitSeconds()),
                number(summary.medianWaitSeconds()),
                number(summary.p95WaitSeconds()),
                number(summary.meanBoundedSlowdown()),
                number(summary.meanBorrowerSlowdown()),
                number(summary.gpuUtilisation()),
                summary.jobsThatBorrowed(),
                summary.migrations(),
                number(summary.remoteGpuHours()),
                summary.jobsKilledAtTimeLimit(),
                change(summary.meanWaitSeconds(), base == null ? Double.NaN : base.meanWaitSeconds()),
                change(summary.medianWaitSeconds(), base == null ? Double.NaN : base.medianWaitSeconds()),
                change(summary.p95WaitSeconds(), base == null ? Double.NaN : base.p95WaitSeconds()),
                change(summary.meanBoundedSlowdown(), base == null ? Double.NaN : base.meanBoundedSlowdown()),
                change(summary.gpuUtilisation(), base == null ? Double.NaN : base.gpuUtilisation()),
                run.passes(),
                perPass(run.plannerNanos(), run.passes()),
                perPass(run.hookNanos(), run.passes()));
    }

    private static Double change(double value, double base) {
        return number(Comparison.changePercent(value, base));
    }

    private static Double perPass(long nanos, long passes) {
        return passes == 0 ? null : nanos / 1e3 / passes;
    }

    private static Double number(double value) {
        return Double.isNaN(value) || Double.isInfinite(value) ? null : value;
    }
}
