package org.vgpu.bench.remote;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

import org.vgpu.bench.Medians;

/** One line of a benchmark's table: a measurement, its median, the range of its ratio over the trials, its goal. */
record Row(String name, String value, String range, String goal, String verdict) {
    /** The table with its header line; {@code label} marks the measurement column (the CPU emulation). */
    static void printTable(List<Row> rows, String label, PrintStream out) {
        String format = "%-56s %24s %16s %12s %7s%n";
        out.printf(format, "measurement" + label, "median", "ratio range", "goal", "met");
        for (Row row : rows) {
            out.printf(format, row.name(), row.value(), row.range(), row.goal(), row.verdict());
        }
    }

    static Row time(String name, Series series) {
        return new Row(name, String.format("%.2f us", series.median() / 1e3), "", "", "");
    }

    /**
     * A time computed from each trial's samples, such as the difference of two series: the median over the
     * trials, and its range.
     */
    static Row derivedTime(String name, TrialRatio perTrial, int trials) {
        double[] nanos = perTrial.eachOf(trials);
        double median = Medians.of(nanos);
        Arrays.sort(nanos);
        return new Row(
                name,
                String.format("%.2f us", median / 1e3),
                String.format("%.2f - %.2f us", nanos[0] / 1e3, nanos[trials - 1] / 1e3),
                "",
                "");
    }

    static Row rate(String name, Series series) {
        return new Row(
                name, String.format("%.2f us (%.0f k/s)", series.median() / 1e3, 1e6 / series.median()), "", "", "");
    }

    static Row bandwidth(String name, Series series, long bytes) {
        return new Row(
                name, String.format("%.1f ms (%.2f GB/s)", series.median() / 1e6, bytes / series.median()), "", "", "");
    }

    /** A ratio shown as a plain number, or as a percentage when {@code percent}. */
    static Row ratio(
            String name,
            String goal,
            boolean percent,
            double threshold,
            TrialRatio perTrial,
            double median,
            int trials) {
        double[] ratios = perTrial.eachOf(trials);
        Arrays.sort(ratios);
        String format = percent ? "%.0f %%" : "%.2f";
        double scale = percent ? 100 : 1;
        boolean met = percent ? median >= threshold : median <= threshold;
        return new Row(
                name,
                String.format(format, median * scale),
                String.format(format, ratios[0] * scale) + " - " + String.format(format, ratios[trials - 1] * scale),
                goal,
                met ? "yes" : "NO");
    }
}
