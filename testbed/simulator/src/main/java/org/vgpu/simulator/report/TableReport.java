package org.vgpu.simulator.report;

import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.DoubleFunction;
import java.util.function.Function;
import java.util.function.ToDoubleFunction;

import org.vgpu.simulator.result.PolicyRun;

/**
 * The comparison as a text table for a person: one column per policy, one line per figure, and after each figure
 * of a policy other than Slurm alone its change against Slurm alone in percent.
 */
public final class TableReport {
    private TableReport() {}

    public static void write(Comparison comparison, PrintStream out) {
        List<PolicySummary> summaries = comparison.summaries();
        PolicySummary base = comparison.baseline().orElse(null);
        List<List<String>> lines = new ArrayList<>();
        List<String> header = new ArrayList<>(List.of(""));
        summaries.forEach(summary -> header.add(summary.policy().shortName()));
        lines.add(header);
        lines.add(row("jobs", summaries, summary -> String.format(Locale.ROOT, "%,d", summary.jobs())));
        lines.add(compared("mean wait", summaries, base, PolicySummary::meanWaitSeconds, TableReport::duration));
        lines.add(compared("median wait", summaries, base, PolicySummary::medianWaitSeconds, TableReport::duration));
        lines.add(compared("p95 wait", summaries, base, PolicySummary::p95WaitSeconds, TableReport::duration));
        lines.add(compared(
                "mean bounded slowdown",
                summaries,
                base,
                PolicySummary::meanBoundedSlowdown,
                value -> String.format(Locale.ROOT, "%.2f", value)));
        lines.add(row(
                "mean slowdown of borrowers",
                summaries,
                summary -> Double.isNaN(summary.meanBorrowerSlowdown())
                        ? "-"
                        : String.format(Locale.ROOT, "%+.1f %%", summary.meanBorrowerSlowdown() * 100)));
        lines.add(compared(
                "GPU utilisation",
                summaries,
                base,
                PolicySummary::gpuUtilisation,
                value -> String.format(Locale.ROOT, "%.1f %%", value * 100)));
        lines.add(row(
                "jobs that borrowed",
                summaries,
                summary -> String.format(Locale.ROOT, "%,d", summary.jobsThatBorrowed())));
        lines.add(row("migrations", summaries, summary -> String.format(Locale.ROOT, "%,d", summary.migrations())));
        lines.add(row(
                "GPU-hours remote",
                summaries,
                summary -> String.format(Locale.ROOT, "%,.1f", summary.remoteGpuHours())));
        lines.add(row(
                "killed at their time limit",
                summaries,
                summary -> String.format(Locale.ROOT, "%,d", summary.jobsKilledAtTimeLimit())));
        List<PolicyRun> runs = comparison.runs();
        lines.add(row("planner per pass", runs, run -> perPass(run.plannerNanos(), run.passes())));
        lines.add(row("hook per pass", runs, run -> perPass(run.hookNanos(), run.passes())));

        out.println("workload: " + comparison.source());
        comparison.overheads().forEach(line -> out.println("overhead: " + line));
        out.println();
        print(lines, out);
        if (base != null) {
            out.println("(in parentheses: the change against slurm, Slurm alone)");
        }
    }

    /** A duration in the unit that reads best: seconds, minutes or hours. */
    static String duration(double seconds) {
        if (Double.isNaN(seconds)) {
            return "-";
        }
        if (seconds < 120) {
            return String.format(Locale.ROOT, "%.0f s", seconds);
        }
        if (seconds < 7_200) {
            return String.format(Locale.ROOT, "%.1f min", seconds / 60);
        }
        return String.format(Locale.ROOT, "%,.1f h", seconds / 3_600);
    }

    private static String perPass(long nanos, long passes) {
        return passes == 0 ? "-" : String.format(Locale.ROOT, "%,.1f us", nanos / 1e3 / passes);
    }

    private static List<String> compared(
            String name,
            List<PolicySummary> summaries,
            PolicySummary base,
            ToDoubleFunction<PolicySummary> figure,
            DoubleFunction<String> format) {
        return row(name, summaries, summary -> {
            double value = figure.applyAsDouble(summary);
            String text = Double.isNaN(value) ? "-" : format.apply(value);
            if (base == null || summary.policy() == base.policy()) {
                return text;
            }
            double change = Comparison.changePercent(value, figure.applyAsDouble(base));
            return Double.isNaN(change) ? text : text + String.format(Locale.ROOT, " (%+.0f %%)", change);
        });
    }

    /** A line of the table: its name, then one cell per policy, made from that policy's summary or run. */
    private static <T> List<String> row(String name, List<T> perPolicy, Function<T, String> cell) {
        List<String> row = new ArrayList<>(List.of(name));
        perPolicy.forEach(item -> row.add(cell.apply(item)));
        return row;
    }

    private static void print(List<List<String>> lines, PrintStream out) {
        int columns = lines.getFirst().size();
        int[] widths = new int[columns];
        for (List<String> line : lines) {
            for (int i = 0; i < columns; i++) {
                widths[i] = Math.max(widths[i], line.get(i).length());
            }
        }
        for (List<String> line : lines) {
            StringBuilder text = new StringBuilder(String.format("%-" + widths[0] + "s", line.getFirst()));
            for (int i = 1; i < columns; i++) {
                text.append("  ").append(String.format("%" + widths[i] + "s", line.get(i)));
            }
            out.println(text.toString().stripTrailing());
        }
    }
}
