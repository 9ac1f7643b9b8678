package org.vgpu.bench;

import java.util.Arrays;
import java.util.Collection;

/** The median every benchmark reports, in one place. */
public final class Medians {
    private Medians() {}

    /** The middle value of {@code values}, or the mean of the two middle ones for an even count; {@code values} is not changed. */
    public static double of(double[] values) {
        if (values.length == 0) {
            throw new IllegalArgumentException("the median of no values");
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }

    public static double of(Collection<Double> values) {
        return of(values.stream().mapToDouble(Double::doubleValue).toArray());
    }
}
