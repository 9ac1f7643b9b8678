package org.vgpu.simulator.report;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.simulator.result.Policy;
import org.vgpu.simulator.result.PolicyRun;

/**
 * Every policy's run of one workload, and each figure's change against Slurm alone: what every output format
 * shows, from one place.
 *
 * @param source where the workload came from
 * @param overheads the overhead model's settings, one line each
 */
public record Comparison(String source, List<String> overheads, List<PolicyRun> runs, List<PolicySummary> summaries) {
    public Comparison {
        Objects.requireNonNull(source, "source");
        overheads = List.copyOf(overheads);
        runs = List.copyOf(runs);
        summaries = List.copyOf(summaries);
    }

    public static Comparison of(String source, List<String> overheads, List<PolicyRun> runs) {
        return new Comparison(
                source, overheads, runs, runs.stream().map(PolicySummary::of).toList());
    }

    /** Slurm alone's figures, when it was run. */
    public Optional<PolicySummary> baseline() {
        return summaries.stream()
                .filter(summary -> summary.policy() == Policy.SLURM_ALONE)
                .findFirst();
    }

    /**
     * The change of {@code value} against {@code base} in percent (-41.0: 41 % less), or NaN where there is no
     * base to compare with (Slurm alone not run, or its figure 0 or undefined).
     */
    public static double changePercent(double value, double base) {
        if (Double.isNaN(value) || Double.isNaN(base) || base == 0) {
            return Double.NaN;
        }
        return (value - base) / base * 100;
    }
}
