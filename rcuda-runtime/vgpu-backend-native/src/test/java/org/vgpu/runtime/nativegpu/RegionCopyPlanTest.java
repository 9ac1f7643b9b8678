package org.vgpu.runtime.nativegpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.DeviceRegion;

/** The split of a gather or scatter between driver copies and copy-kernel launches, and the kernels' table bytes. */
class RegionCopyPlanTest {
    private static final long BASE = 0x7f00_0000_0000L;

    @Test
    void smallRegionsGoToTheKernelInTablesOfAtMostTheKernelsCapacity() {
        List<DeviceRegion> regions = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            regions.add(new DeviceRegion(BASE + i * (2L << 20), 4096));
        }
        RegionCopyPlan plan = RegionCopyPlan.of(regions);
        assertEquals(List.of(), plan.directCopies());
        assertEquals(3, plan.kernelBatches().size());
        assertEquals(
                List.of(240, 240, 20),
                plan.kernelBatches().stream().map(b -> b.regions().size()).toList());
        assertEquals(
                List.of(0L, 240 * 4096L, 480 * 4096L),
                plan.kernelBatches().stream().map(b -> b.packedOffset()).toList());
        assertEquals(regions.subList(240, 480), plan.kernelBatches().get(1).regions());
    }

    @Test
    void largeRegionsAreCopiedByTheDriverAndSplitTheKernelsRunsWhereTheyLie() {
        DeviceRegion small1 = new DeviceRegion(BASE, 1000);
        DeviceRegion small2 = new DeviceRegion(BASE + 4096, 3000);
        DeviceRegion large = new DeviceRegion(BASE + (2L << 20), RegionCopyPlan.DIRECT_COPY_MIN_BYTES);
        DeviceRegion empty = new DeviceRegion(BASE + (4L << 20), 0);
        DeviceRegion small3 = new DeviceRegion(BASE + (6L << 20), RegionCopyPlan.DIRECT_COPY_MIN_BYTES - 1);
        RegionCopyPlan plan = RegionCopyPlan.of(List.of(small1, small2, large, empty, small3));
        assertEquals(List.of(new RegionCopyPlan.DirectCopy(large, 4000)), plan.directCopies());
        assertEquals(
                List.of(
                        new RegionCopyPlan.KernelBatch(0, List.of(small1, small2)),
                        new RegionCopyPlan.KernelBatch(4000 + RegionCopyPlan.DIRECT_COPY_MIN_BYTES, List.of(small3))),
                plan.kernelBatches());
    }

    @Test
    void noRegionsOrOnlyEmptyOnesPlanNothing() {
        assertEquals(new RegionCopyPlan(List.of(), List.of()), RegionCopyPlan.of(List.of()));
        assertEquals(new RegionCopyPlan(List.of(), List.of()), RegionCopyPlan.of(List.of(new DeviceRegion(BASE, 0))));
    }

    @Test
    void theTableHoldsAddressesThenCumulativeEndOffsetsLittleEndian() {
        RegionCopyPlan.KernelBatch batch = new RegionCopyPlan.KernelBatch(
                0,
                List.of(
                        new DeviceRegion(BASE + 16, 100),
                        new DeviceRegion(BASE + 8192, 28),
                        new DeviceRegion(BASE + 64, 4)));
        byte[] table = batch.table();
        assertEquals(RegionCopyPlan.TABLE_BYTES, table.length);
        assertEquals(2880, table.length, "RegionTable of copy_kernels.cu: 240 u64 then 240 u32");
        ByteBuffer want = ByteBuffer.allocate(RegionCopyPlan.TABLE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        want.putLong(0, BASE + 16).putLong(8, BASE + 8192).putLong(16, BASE + 64);
        want.putInt(1920, 100).putInt(1924, 128).putInt(1928, 132);
        assertArrayEquals(want.array(), table);
        assertEquals(100, batch.largestRegionBytes());
    }
}
