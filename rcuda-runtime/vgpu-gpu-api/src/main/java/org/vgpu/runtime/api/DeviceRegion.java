package org.vgpu.runtime.api;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
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
        List<List<DeviceRegion>> runs = new ArrayList<>();
        runsOneByOne(regions, runBytes, maxPieces).forEachRemaining(runs::add);
        return runs;
    }

    /**
     * The runs of {@link #runs(List, long, int)}, each cut when it is asked for: a worker streams a
     * copy run by run, holding one at a time however many runs the copy makes.
     */
    public static Iterator<List<DeviceRegion>> runsOneByOne(List<DeviceRegion> regions, long runBytes, int maxPieces) {
        return runsOneByOne(regions, run -> runBytes, maxPieces);
    }

    private static Iterator<List<DeviceRegion>> runsOneByOne(
            List<DeviceRegion> regions, IntToLongFunction runBytes, int maxPieces) {
        if (maxPieces < 1) {
            throw new IllegalArgumentException("runs of " + maxPieces + " pieces");
        }
        capacity(runBytes, 0);
        return new Iterator<>() {
            private int next; // the region the next run starts in
            private long offset; // how much of it earlier runs took
            private int cut; // runs cut so far

            @Override
            public boolean hasNext() {
                return next < regions.size();
            }

            @Override
            public List<DeviceRegion> next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                List<DeviceRegion> run = new ArrayList<>();
                long capacity = capacity(runBytes, cut);
                long filled = 0;
                while (next < regions.size()) {
                    DeviceRegion region = regions.get(next);
                    if (run.size() == maxPieces || (filled == capacity && region.bytes() > 0)) {
                        break;
                    }
                    long piece = Math.min(capacity - filled, region.bytes() - offset);
                    run.add(
                            offset == 0 && piece == region.bytes()
                                    ? region
                                    : new DeviceRegion(region.address() + offset, piece));
                    filled += piece;
                    offset += piece;
                    if (offset == region.bytes()) {
                        next++;
                        offset = 0;
                    }
                }
                cut++;
                return run;
            }
        };
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
