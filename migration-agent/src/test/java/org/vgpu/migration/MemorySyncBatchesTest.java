package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;

import org.junit.jupiter.api.Test;

/** How mem-sync cuts a state into batches: small ones at both ends of a long copy, full buffers between. */
class MemorySyncBatchesTest {
    private static final long MIB = 1 << 20;

    @Test
    void aLongCopyRampsUpAndDownAroundEvenFullBatches() {
        long[] sizes = MemorySync.batchBytes(64 * MIB, 8 * MIB);
        // 64 MiB less 2 x 7 MiB of ramps leaves 50 MiB for seven batches of at most 8 MiB
        assertEquals(13, sizes.length, Arrays.toString(sizes));
        assertArrayEquals(new long[] {MIB, 2 * MIB, 4 * MIB}, Arrays.copyOfRange(sizes, 0, 3));
        assertArrayEquals(new long[] {4 * MIB, 2 * MIB, MIB}, Arrays.copyOfRange(sizes, 10, 13));
        long even = sizes[3];
        assertEquals(7491584, even, "50 MiB / 7, rounded up to whole pages");
        for (int k = 3; k < 9; k++) {
            assertEquals(even, sizes[k], "batch " + k);
        }
        assertTrue(sizes[9] <= even && sizes[9] > 0, "the last full-size batch takes the rest: " + sizes[9]);
        assertEquals(64 * MIB, Arrays.stream(sizes).sum());
    }

    @Test
    void aCopyTooShortToRampIsCutIntoWholeBuffers() {
        // 2 x (1 + 2 + 4) + 8 = 22 MiB at least to ramp
        assertArrayEquals(new long[] {8 * MIB, 8 * MIB, 8 * MIB}, MemorySync.batchBytes(21 * MIB, 8 * MIB));
        assertArrayEquals(new long[] {8 * MIB}, MemorySync.batchBytes(0, 8 * MIB));
        // a buffer of one page has no smaller page to ramp with
        assertArrayEquals(new long[] {4096, 4096, 4096, 4096}, MemorySync.batchBytes(4 * 4096, 4096));
    }

    @Test
    void everyPlanCoversTheCopyWithBatchesThatFitTheBuffers() {
        long[] buffers = {4096, 8192, 12288, 64 << 10, 8 * MIB, 16 * MIB};
        long[] totals = {1, 4095, 4096, 100_000, 22 * MIB, 22 * MIB + 1, 64 * MIB + 3, 1L << 30, (1L << 30) + 12345};
        for (long buffer : buffers) {
            for (long total : totals) {
                long[] sizes = MemorySync.batchBytes(total, buffer);
                String plan = total + " bytes through " + buffer + ": " + Arrays.toString(sizes);
                long sum = Arrays.stream(sizes).sum();
                assertTrue(sum >= total && sum - total < buffer, plan);
                assertTrue(Arrays.stream(sizes).allMatch(size -> size > 0 && size <= buffer), plan);
                // batches grow from the first
                assertTrue(sizes.length == 1 || sizes[0] <= sizes[1], plan);
            }
        }
    }
}
