package org.vgpu.bench.remote;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.DoubleSupplier;

import org.vgpu.bench.Medians;
import org.vgpu.runtime.remote.RemoteTuning;

/** Nanoseconds of one measurement, one sample per timed trial. */
final class Series {
    /** Trials every remote-bench table samples unrecorded before its recorded ones. */
    static final int WARM_UP_TRIALS = 2;

    /**
     * The header line of a table whose series were sampled by {@link #sampleAlternating}: where its {@code processes}
     * ran, on how many cores, with which tuning, and how many trials (each of {@code perTrial}, when not empty) its
     * medians and the ranges of its {@code ranged} come from.
     */
    static String howSampled(String processes, String host, String perTrial, int trials, String ranged) {
        return String.format(
                "%s are separate processes on %s, %d cores; tuning: %s; %s%d trials after %d warm-up trials; medians,"
                        + " and %s over the trials",
                processes,
                host,
                Runtime.getRuntime().availableProcessors(),
                RemoteTuning.current().describe(),
                perTrial.isEmpty() ? "" : perTrial + ", ",
                trials,
                WARM_UP_TRIALS,
                ranged);
    }

    private final DoubleSupplier measurement;
    private final List<Double> samples = new ArrayList<>();

    Series(DoubleSupplier measurement) {
        this.measurement = measurement;
    }

    void sample(boolean record) {
        double nanos = measurement.getAsDouble();
        if (record) {
            samples.add(nanos);
        }
    }

    double at(int trial) {
        return samples.get(trial);
    }

    /**
     * Samples every series once per trial, after {@code warmUpTrials} unrecorded ones, in alternating order (odd
     * trials reversed), so that no series always runs first or last.
     */
    static void sampleAlternating(List<Series> all, int warmUpTrials, int trials) {
        for (int trial = 0; trial < warmUpTrials + trials; trial++) {
            List<Series> order = new ArrayList<>(all);
            if (trial % 2 != 0) {
                Collections.reverse(order);
            }
            for (Series series : order) {
                series.sample(trial >= warmUpTrials);
            }
        }
    }

    double median() {
        return Medians.of(samples);
    }
}
