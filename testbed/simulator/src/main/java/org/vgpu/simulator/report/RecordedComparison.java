package org.vgpu.simulator.report;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

import org.vgpu.simulator.result.JobOutcome;
import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;
import org.vgpu.simulator.workload.SimJob;
import org.vgpu.simulator.workload.Workload;

/**
 * One simulated run (Slurm alone, or a borrowing policy for a history that ran with vgpu) set against what the input
 * recorded: each job's recorded start (sacct's Start, the trace's scheduled time, SWF's submit plus wait) beside the
 * start the simulation gave it, and both wait distributions. Only jobs with a recorded start are compared.
 *
 * @param policy the simulated run's policy
 * @param jobs the compared jobs in submit order
 */
public record RecordedComparison(Policy policy, List<Job> jobs) {
    /** One job: seconds from the workload's start; how many of its GPUs the simulation borrowed at its start. */
    public record Job(
            String id,
            long submitSecond,
            long recordedStartSecond,
            double simulatedStartSecond,
            int simulatedBorrowedGpus) {
        public double recordedWaitSeconds() {
            return recordedStartSecond - submitSecond;
        }

        public double simulatedWaitSeconds() {
            return simulatedStartSecond - submitSecond;
        }

        /** Simulated start minus recorded start. */
        public double differenceSeconds() {
            return simulatedStartSecond - recordedStartSecond;
        }
    }

    public RecordedComparison {
        java.util.Objects.requireNonNull(policy, "policy");
        jobs = List.copyOf(jobs);
    }

    /** The jobs of {@code workload} with a recorded start, against their outcome in {@code run}. */
    public static RecordedComparison of(Workload workload, PolicyRun run) {
        List<Job> compared = new ArrayList<>();
        List<SimJob> jobs = workload.jobs();
        List<JobOutcome> outcomes = run.jobs();
        for (int i = 0; i < jobs.size(); i++) {
            SimJob job = jobs.get(i);
            JobOutcome outcome = outcomes.get(i);
            if (!outcome.jobId().equals(job.id())) {
                throw new IllegalStateException("outcome " + outcome.jobId() + " is not job " + job.id());
            }
            if (job.recordedStartSecond().isPresent()) {
                compared.add(new Job(
                        job.id(),
                        job.submitSecond(),
                        job.recordedStartSecond().getAsLong(),
                        outcome.startSecond(),
                        outcome.borrowedGpus()));
            }
        }
        return new RecordedComparison(run.policy(), compared);
    }

    /** Mean, median and p95 (nearest rank) of the recorded waits. */
    public double[] recordedWaits() {
        return distribution(jobs.stream().mapToDouble(Job::recordedWaitSeconds).toArray());
    }

    /** Mean, median and p95 (nearest rank) of the simulated waits. */
    public double[] simulatedWaits() {
        return distribution(jobs.stream().mapToDouble(Job::simulatedWaitSeconds).toArray());
    }

    private static double[] distribution(double[] waits) {
        double[] sorted = waits.clone();
        Arrays.sort(sorted);
        return new double[] {
            Arrays.stream(sorted).average().orElse(Double.NaN),
            PolicySummary.percentile(sorted, 50),
            PolicySummary.percentile(sorted, 95)
        };
    }

    private static void waitRow(PrintStream out, String name, double[] waits) {
        row(out, name, Arrays.stream(waits).mapToObj(TableReport::duration).toArray(String[]::new));
    }

    private static void row(PrintStream out, String name, String... cells) {
        out.printf(Locale.ROOT, "  %-10s %12s %12s %12s%n", name, cells[0], cells[1], cells[2]);
    }

    /**
     * Prints both wait distributions and the largest start difference; with {@code perJob}, every job's line (under
     * a borrowing policy with how many GPUs the simulation borrowed for it).
     */
    public void write(PrintStream out, boolean perJob) {
        if (jobs.isEmpty()) {
            out.println("recorded against simulated: no job of the input has a recorded start");
            return;
        }
        out.printf(
                Locale.ROOT,
                "recorded against simulated (%s), %,d jobs with a recorded start:%n",
                policy == Policy.SLURM_ALONE ? "Slurm alone" : "policy " + policy.shortName(),
                jobs.size());
        row(out, "wait", "mean", "median", "p95");
        waitRow(out, "recorded", recordedWaits());
        waitRow(out, "simulated", simulatedWaits());
        Job farthest = jobs.stream()
                .max(Comparator.comparingDouble(job -> Math.abs(job.differenceSeconds())))
                .orElseThrow();
        out.printf(
                Locale.ROOT,
                "  start difference (simulated - recorded): mean |d| %.1f s, largest %+.1f s (job %s)%n",
                jobs.stream()
                        .mapToDouble(job -> Math.abs(job.differenceSeconds()))
                        .average()
                        .orElseThrow(),
                farthest.differenceSeconds(),
                farthest.id());
        if (perJob) {
            boolean borrowing = policy != Policy.SLURM_ALONE;
            out.printf(
                    Locale.ROOT,
                    "  %-12s %10s %16s %16s %12s%s%n",
                    "job",
                    "submit",
                    "recorded start",
                    "simulated start",
                    "difference",
                    borrowing ? String.format(Locale.ROOT, " %18s", "simulated borrowed") : "");
            for (Job job : jobs) {
                out.printf(
                        Locale.ROOT,
                        "  %-12s %10d %16d %16.1f %+12.1f%s%n",
                        job.id(),
                        job.submitSecond(),
                        job.recordedStartSecond(),
                        job.simulatedStartSecond(),
                        job.differenceSeconds(),
                        borrowing ? String.format(Locale.ROOT, " %18d", job.simulatedBorrowedGpus()) : "");
            }
        }
    }
}
