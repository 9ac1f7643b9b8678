package org.vgpu.runtime.workloads;

import java.util.function.Supplier;

/**
 * How a computed result compares with the CPU reference: how many values were compared, how many
 * were out of bounds, the largest absolute and relative errors, and the first offending value.
 * Exact comparisons compare bit patterns, so they hold only where device and reference do the same
 * arithmetic in the same order; the others state their tolerance.
 *
 * @param firstMismatch names the first value out of bounds with both numbers; empty when none
 */
public record Comparison(long compared, long mismatches, double maxAbsError, double maxRelError, String firstMismatch) {

    /** A tolerance {@code |actual - expected| <= absolute + relative * |expected|}. */
    public record Tolerance(double absolute, double relative) {
        boolean accepts(double expected, double actual) {
            return Math.abs(actual - expected) <= absolute + relative * Math.abs(expected);
        }

        @Override
        public String toString() {
            return String.format("abs %.1e + rel %.1e", absolute, relative);
        }
    }

    public boolean passed() {
        return mismatches == 0;
    }

    /** Bit-for-bit comparison of floats. */
    public static Comparison exact(String what, float[] expected, float[] actual) {
        Builder builder = new Builder(what, expected.length, actual.length);
        for (int index = 0; index < Math.min(expected.length, actual.length); index++) {
            int i = index;
            boolean same = Float.floatToRawIntBits(expected[i]) == Float.floatToRawIntBits(actual[i]);
            builder.add(i, expected[i], actual[i], same, () -> floatText(expected[i]), () -> floatText(actual[i]));
        }
        return builder.build();
    }

    public static Comparison exact(String what, int[] expected, int[] actual) {
        Builder builder = new Builder(what, expected.length, actual.length);
        for (int index = 0; index < Math.min(expected.length, actual.length); index++) {
            int i = index;
            builder.add(
                    i,
                    expected[i],
                    actual[i],
                    expected[i] == actual[i],
                    () -> Integer.toString(expected[i]),
                    () -> Integer.toString(actual[i]));
        }
        return builder.build();
    }

    /** Exact comparison of 64-bit words, shown in hex since they are often addresses or hashes. */
    public static Comparison exact(String what, long[] expected, long[] actual) {
        Builder builder = new Builder(what, expected.length, actual.length);
        for (int index = 0; index < Math.min(expected.length, actual.length); index++) {
            int i = index;
            builder.add(
                    i,
                    // as doubles only for the largest error; the words decide a match, the hex shows them
                    (double) expected[i],
                    (double) actual[i],
                    expected[i] == actual[i],
                    () -> "0x" + Long.toHexString(expected[i]),
                    () -> "0x" + Long.toHexString(actual[i]));
        }
        return builder.build();
    }

    /** Float results against a double-precision reference, within {@code tolerance}. */
    public static Comparison within(String what, double[] expected, float[] actual, Tolerance tolerance) {
        Builder builder = new Builder(what, expected.length, actual.length);
        for (int index = 0; index < Math.min(expected.length, actual.length); index++) {
            int i = index;
            builder.add(
                    i,
                    expected[i],
                    actual[i],
                    tolerance.accepts(expected[i], actual[i]),
                    () -> Double.toString(expected[i]),
                    () -> Float.toString(actual[i]));
        }
        return builder.build();
    }

    /** A single value, e.g. a total. */
    public static Comparison within(String what, double expected, double actual, Tolerance tolerance) {
        Builder builder = new Builder(what, 1, 1);
        builder.add(
                -1,
                expected,
                actual,
                tolerance.accepts(expected, actual),
                () -> Double.toString(expected),
                () -> Double.toString(actual));
        return builder.build();
    }

    /** {@code values} as doubles, to start a double-precision reference from the same inputs as the device. */
    static double[] widened(float[] values) {
        double[] result = new double[values.length];
        for (int i = 0; i < values.length; i++) {
            result[i] = values[i];
        }
        return result;
    }

    private static String floatText(float value) {
        return value + " (0x" + Integer.toHexString(Float.floatToRawIntBits(value)) + ")";
    }

    /** Both comparisons together; the first mismatch is this one's if it has one. */
    public Comparison and(Comparison other) {
        return new Comparison(
                compared + other.compared,
                mismatches + other.mismatches,
                Math.max(maxAbsError, other.maxAbsError),
                Math.max(maxRelError, other.maxRelError),
                firstMismatch.isEmpty() ? other.firstMismatch : firstMismatch);
    }

    /** "exact" or the error figures, for one line of output. */
    public String summary() {
        if (maxAbsError == 0 && passed()) {
            return "exact";
        }
        return String.format("max abs %.3g, max rel %.3g", maxAbsError, maxRelError);
    }

    private static final class Builder {
        private final String what;
        private long compared;
        private long mismatches;
        private double maxAbs;
        private double maxRel;
        private String first = "";

        Builder(String what, int expectedLength, int actualLength) {
            this.what = what;
            if (expectedLength != actualLength) {
                mismatches = Math.abs(expectedLength - actualLength);
                first = what + ": expected " + expectedLength + " values, got " + actualLength;
            }
        }

        /** {@code index} -1 for a single value; the texts are made only for the first mismatch. */
        void add(
                int index,
                double expected,
                double actual,
                boolean accepted,
                Supplier<String> expectedText,
                Supplier<String> actualText) {
            compared++;
            double abs = Math.abs(actual - expected);
            // NaN on either side counts as an infinite error rather than vanishing from the maxima.
            abs = Double.isNaN(abs) ? Double.POSITIVE_INFINITY : abs;
            maxAbs = Math.max(maxAbs, abs);
            maxRel = Math.max(
                    maxRel, expected == 0 ? (abs == 0 ? 0 : Double.POSITIVE_INFINITY) : abs / Math.abs(expected));
            if (!accepted) {
                if (first.isEmpty()) {
                    first = what + (index < 0 ? "" : "[" + index + "]") + ": expected " + expectedText.get() + ", got "
                            + actualText.get();
                }
                mismatches++;
            }
        }

        Comparison build() {
            return new Comparison(compared, mismatches, maxAbs, maxRel, first);
        }
    }
}
