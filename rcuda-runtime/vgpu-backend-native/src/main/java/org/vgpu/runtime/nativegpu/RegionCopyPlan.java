package org.vgpu.runtime.nativegpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.vgpu.runtime.api.DeviceRegion;

/**
 * How a local GPU runs one gather or scatter between device regions and a packed host buffer.
 * A region of at least {@link #DIRECT_COPY_MIN_BYTES} goes by one driver copy: the copy engines
 * move it at full speed and its setup cost is small beside its size. Runs of smaller regions go to
 * vgpu's copy kernels, at most {@link #TABLE_REGIONS} per launch, because for them the setup of one
 * driver copy each is what a migration of many small allocations would spend its time on.
 *
 * @param directCopies regions copied one by one, each with where its bytes lie in the packed buffer
 * @param kernelBatches launches of the copy kernels, in packed-buffer order
 */
record RegionCopyPlan(List<DirectCopy> directCopies, List<KernelBatch> kernelBatches) {
    /** Regions at least this large are copied by the driver one by one. */
    static final long DIRECT_COPY_MIN_BYTES = 256 << 10;
    /** COPY_TABLE_REGIONS of copy_kernels.cu: the regions one launch's table holds. */
    static final int TABLE_REGIONS = 240;
    /** The kernels' by-value RegionTable: TABLE_REGIONS device addresses (u64), then as many end offsets (u32). */
    static final int TABLE_BYTES = TABLE_REGIONS * (Long.BYTES + Integer.BYTES);

    /** One region and the offset of its bytes in the packed host buffer. */
    record DirectCopy(DeviceRegion region, long packedOffset) {}

    /**
     * Regions whose bytes lie back to back in the packed buffer from {@code packedOffset}: one launch.
     */
    record KernelBatch(long packedOffset, List<DeviceRegion> regions) {
        /** The launch's RegionTable, byte for byte as the kernel declares it. */
        byte[] table() {
            ByteBuffer table = ByteBuffer.allocate(TABLE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
            long end = 0;
            for (int r = 0; r < regions.size(); r++) {
                end += regions.get(r).bytes();
                table.putLong(r * Long.BYTES, regions.get(r).address());
                table.putInt(TABLE_REGIONS * Long.BYTES + r * Integer.BYTES, (int) end);
            }
            return table.array();
        }

        long largestRegionBytes() {
            long largest = 0;
            for (DeviceRegion region : regions) {
                largest = Math.max(largest, region.bytes());
            }
            return largest;
        }
    }

    /** The plan for {@code regions}, packed back to back in their order; empty regions copy nothing. */
    static RegionCopyPlan of(List<DeviceRegion> regions) {
        List<DirectCopy> direct = new ArrayList<>();
        List<KernelBatch> batches = new ArrayList<>();
        List<DeviceRegion> batch = new ArrayList<>();
        long batchOffset = 0;
        long offset = 0;
        for (DeviceRegion region : regions) {
            if (region.bytes() == 0) {
                continue;
            }
            boolean byDriver = region.bytes() >= DIRECT_COPY_MIN_BYTES;
            // A batch's regions must be contiguous in the packed buffer, so a direct copy ends it.
            if (!batch.isEmpty() && (byDriver || batch.size() == TABLE_REGIONS)) {
                batches.add(new KernelBatch(batchOffset, frozen(batch)));
                batch.clear();
            }
            if (byDriver) {
                direct.add(new DirectCopy(region, offset));
            } else {
                if (batch.isEmpty()) {
                    batchOffset = offset;
                }
                batch.add(region);
            }
            offset += region.bytes();
        }
        if (!batch.isEmpty()) {
            batches.add(new KernelBatch(batchOffset, frozen(batch)));
        }
        return new RegionCopyPlan(frozen(direct), frozen(batches));
    }

    /**
     * An unmodifiable copy of one class whatever its size. List.copyOf gives another class for one or
     * two elements than for more, and the JIT compiles the loops over these lists for the classes it
     * has seen: a worker warmed up on batches of many regions trapped and recompiled them when a
     * migration's first reads brought a batch of one (measured on H200s, beside other traps, while
     * the app was stopped).
     */
    private static <T> List<T> frozen(List<T> list) {
        return Collections.unmodifiableList(new ArrayList<>(list));
    }
}
