package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.memory.Allocation;
import org.vgpu.runtime.memory.DeviceMemory;

/**
 * How mem-sync cuts a state into batches: adjacent small allocations of a chunk joined into one piece, small
 * batches at both ends of a long copy, full buffers between.
 */
class MemorySyncBatchesTest {
    private static final long MIB = 1 << 20;
    private static final long G = VaWindow.GRANULARITY;

    @Test
    void adjacentAllocationsOfOneChunkAreCopiedAsOnePiece() {
        DeviceMemory memory = new DeviceMemory(new VaWindow(0, VaWindow.DEFAULT_BASE, 64 * G), 0);
        List<DeviceRegion> allocations = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            Allocation allocation = memory.allocate(4096).allocation();
            allocations.add(new DeviceRegion(allocation.address(), allocation.requestedBytes()));
        }
        List<DeviceRegion> pieces = MemorySync.pieces(allocations);
        assertEquals(20, pieces.size(), "10,000 x 4 KiB fill 19 chunks and part of a 20th");
        for (int k = 0; k < 19; k++) {
            assertEquals(new DeviceRegion(VaWindow.DEFAULT_BASE + k * G, G), pieces.get(k), "chunk " + k);
        }
        assertEquals(new DeviceRegion(VaWindow.DEFAULT_BASE + 19 * G, (10_000 - 19 * 512) * 4096L), pieces.get(19));
        memory.requireAll(pieces, "gather");
    }

    @Test
    void piecesAreJoinedOnlyWhereOneEndsAndTheNextBeginsInsideAGranule() {
        long base = VaWindow.DEFAULT_BASE;
        List<DeviceRegion> regions = List.of(
                new DeviceRegion(base, 100),
                new DeviceRegion(base + 256, 256), // padding before it: a piece of its own
                new DeviceRegion(base + 512, 512), // joins the one before
                new DeviceRegion(base + G - 1024, 1024), // ends where the next granule starts
                new DeviceRegion(base + G, 3 * G), // a mapping of its own: not joined
                new DeviceRegion(base + 4 * G, 0),
                new DeviceRegion(base + 4 * G, 64),
                new DeviceRegion(base + 4 * G + 64, 64));
        assertEquals(
                List.of(
                        new DeviceRegion(base, 100),
                        new DeviceRegion(base + 256, 768),
                        new DeviceRegion(base + G - 1024, 1024),
                        new DeviceRegion(base + G, 3 * G),
                        new DeviceRegion(base + 4 * G, 0),
                        new DeviceRegion(base + 4 * G, 128)),
                MemorySync.pieces(regions));
        assertEquals(List.of(), MemorySync.pieces(List.of()));
    }

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
