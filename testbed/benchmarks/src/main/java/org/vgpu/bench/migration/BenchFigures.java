package org.vgpu.bench.migration;

import java.util.Arrays;
import java.util.stream.Collectors;

import org.vgpu.bench.Medians;

/** The figures the sections print: medians of timed trials, bandwidths and sizes as the tables write them. */
final class BenchFigures {
    private BenchFigures() {}

    /** One timed trial's figure. */
    interface Measurement {
        double take();
    }

    static double median(int trials, Measurement measurement) {
        double[] values = new double[trials];
        for (int trial = 0; trial < trials; trial++) {
            values[trial] = measurement.take();
        }
        return median(values);
    }

    static double median(double[] values) {
        return Medians.of(values);
    }

    /** Each of {@code seconds} as the bandwidth of copying {@code bytes}, in GB/s, in trial order. */
    static String gigabytesPerSecond(long bytes, double[] seconds) {
        return Arrays.stream(seconds)
                .mapToObj(each -> String.format("%.2f", bytes / each / 1e9))
                .collect(Collectors.joining(" "));
    }

    static String bytes(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        return bytes >= 1L << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
    }
}
