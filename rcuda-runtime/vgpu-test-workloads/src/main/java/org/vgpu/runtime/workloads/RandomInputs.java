package org.vgpu.runtime.workloads;

import java.util.SplittableRandom;

/** Seeded input generation shared by the workloads, so a seed reproduces a run exactly. */
final class RandomInputs {
    private RandomInputs() {}

    /** {@code count} floats uniform in {@code [low, high)}. */
    static float[] uniform(SplittableRandom random, int count, float low, float high) {
        float[] values = new float[count];
        for (int i = 0; i < count; i++) {
            values[i] = low + (high - low) * random.nextFloat();
        }
        return values;
    }

    /** A uniformly random permutation of {@code 0 .. count-1} (Fisher-Yates). */
    static int[] permutation(SplittableRandom random, int count) {
        int[] values = new int[count];
        for (int i = 0; i < count; i++) {
            values[i] = i;
        }
        for (int i = count - 1; i > 0; i--) {
            int j = random.nextInt(i + 1);
            int swap = values[i];
            values[i] = values[j];
            values[j] = swap;
        }
        return values;
    }
}
