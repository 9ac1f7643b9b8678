package org.vgpu.runtime.api;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntToLongFunction;

/** {@code bytes} of device memory from {@code address}: one piece of a gathering copy. */
public record DeviceRegion(long address, long bytes) {
    public DeviceRegion {
        if (bytes < 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "region byte count must be >= 0, got " + bytes);
        }
    }

    /**
     * {@code regions} cut into runs of consecutive pieces, each run {@code runBytes} long (the last
     * one shorter) and of at most {@code maxPieces} pieces, in order: a region that straddles a
     * run's end is split between runs. A region of 0 bytes goes with the run it falls in, or the
     * last one, so that its pointer is still checked; no regions make no runs.
     */
    public static List<List<DeviceRegion>> runs(List<DeviceRegion> regions, long runBytes, int maxPieces) {
        return runs(regions, run -> runBytes, maxPieces);
    }

    /**
     * As {@link #runs(List, long, int)}, with run {@code i} (from 0) {@code runBytes.applyAsLong(i)}
     * long, so that runs may differ in size.
     */
    public static List<List<DeviceRegion>> runs(List<DeviceRegion> regions, IntToLongFunction runBytes, int maxPieces) {
        if (maxPieces < 1) {
            throw new IllegalArgumentException("runs of " + maxPieces + " pieces");
        }
        List<List<DeviceRegion>> runs = new ArrayList<>();
        List<DeviceRegion> run = new ArrayList<>();
        long capacity = capacity(runBytes, 0);
        long filled = 0;
        for (DeviceRegion region : regions) {
            long offset = 0;
            do {
                if (run.size() == maxPieces || (filled == capacity && region.bytes() > 0)) {
                    runs.add(run);
                    run = new ArrayList<>();
                    capacity = capacity(runBytes, runs.size());
                    filled = 0;
                }
                long piece = Math.min(capacity - filled, region.bytes() - offset);
                run.add(
                        offset == 0 && piece == region.bytes()
                                ? region
                                : new DeviceRegion(region.address() + offset, piece));
                filled += piece;
                offset += piece;
            } while (offset < region.bytes());
        }
        if (!run.isEmpty()) {
            runs.add(run);
        }
        return runs;
    }

    private static long capacity(IntToLongFunction runBytes, int run) {
        long bytes = runBytes.applyAsLong(run);
        if (bytes < 1) {
            throw new IllegalArgumentException("run " + run + " of " + bytes + " bytes");
        }
        return bytes;
    }

    /** The bytes of {@code regions} together; refuses a sum no copy could hold. */
    public static long totalBytes(List<DeviceRegion> regions) {
        long total = 0;
        for (DeviceRegion region : regions) {
            total += region.bytes();
            if (total < 0) {
                throw new VgpuException(
                        ErrorCode.CUDA_ERROR_INVALID_VALUE, "the regions hold more than 2^63 bytes together");
            }
        }
        return total;
    }
}
