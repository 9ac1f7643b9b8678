package org.vgpu.bench.remote;

/** A ratio or time computed from one trial's samples. */
@FunctionalInterface
interface TrialRatio {
    double at(int trial);

    /** The value of each of the first {@code trials} trials, in trial order. */
    default double[] eachOf(int trials) {
        double[] values = new double[trials];
        for (int t = 0; t < trials; t++) {
            values[t] = at(t);
        }
        return values;
    }
}
