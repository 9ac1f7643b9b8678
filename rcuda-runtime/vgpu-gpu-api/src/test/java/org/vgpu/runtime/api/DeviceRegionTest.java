package org.vgpu.runtime.api;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import org.junit.jupiter.api.Test;

class DeviceRegionTest {
    private static DeviceRegion r(long address, long bytes) {
        return new DeviceRegion(address, bytes);
    }

    @Test
    void runsCutRegionsAtRunEndsAndKeepEmptyRegionsWithTheirNeighbours() {
        List<DeviceRegion> regions = List.of(r(0x1000, 3), r(0x2000, 0), r(0x3000, 6), r(0x4000, 0));
        assertEquals(
                List.of(
                        List.of(r(0x1000, 3), r(0x2000, 0), r(0x3000, 1)),
                        List.of(r(0x3001, 4)),
                        List.of(r(0x3005, 1), r(0x4000, 0))),
                DeviceRegion.runs(regions, 4, 100));
    }

    @Test
    void runsOneByOneCutOnlyTheRunAskedForHoweverManyTheRegionsMake() {
        // 2^42 runs of 1 MiB: cut all at once they would not fit any heap
        Iterator<List<DeviceRegion>> runs = DeviceRegion.runsOneByOne(List.of(r(0x1000, 1L << 62)), 1 << 20, 100);
        assertEquals(List.of(r(0x1000, 1 << 20)), runs.next());
        assertEquals(List.of(r(0x1000 + (1 << 20), 1 << 20)), runs.next());
        assertTrue(runs.hasNext());
        List<DeviceRegion> regions = List.of(r(0x1000, 3), r(0x2000, 0), r(0x3000, 6), r(0x4000, 0));
        List<List<DeviceRegion>> oneByOne = new ArrayList<>();
        DeviceRegion.runsOneByOne(regions, 4, 100).forEachRemaining(oneByOne::add);
        assertEquals(DeviceRegion.runs(regions, 4, 100), oneByOne);
        assertFalse(DeviceRegion.runsOneByOne(List.of(), 4, 100).hasNext());
    }

    @Test
    void runsHoldAtMostTheirPieces() {
        List<DeviceRegion> regions = List.of(r(0x1000, 1), r(0x2000, 1), r(0x3000, 1), r(0x4000, 0));
        assertEquals(
                List.of(List.of(r(0x1000, 1), r(0x2000, 1)), List.of(r(0x3000, 1), r(0x4000, 0))),
                DeviceRegion.runs(regions, 1 << 20, 2));
    }

    @Test
    void runsOfDifferentSizesTakeTheirSizeByPosition() {
        List<DeviceRegion> regions = List.of(r(0x1000, 5), r(0x2000, 4));
        long[] sizes = {1, 2, 4};
        assertEquals(
                List.of(
                        List.of(r(0x1000, 1)),
                        List.of(r(0x1001, 2)),
                        List.of(r(0x1003, 2), r(0x2000, 2)),
                        List.of(r(0x2002, 2))),
                DeviceRegion.runs(regions, run -> sizes[Math.min(run, sizes.length - 1)], 100));
        assertThrows(IllegalArgumentException.class, () -> DeviceRegion.runs(regions, run -> run == 0 ? 5 : 0, 100));
    }

    @Test
    void onlyEmptyRegionsMakeOneEmptyRunAndNoRegionsNone() {
        assertEquals(
                List.of(List.of(r(0x1000, 0), r(0x2000, 0))),
                DeviceRegion.runs(List.of(r(0x1000, 0), r(0x2000, 0)), 4, 8));
        assertEquals(List.of(), DeviceRegion.runs(List.of(), 4, 8));
        assertThrows(IllegalArgumentException.class, () -> DeviceRegion.runs(List.of(), 0, 8));
    }
}
