package org.vgpu.bench.migration;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Mem-sync's baseline: raw copies through pinned memory, device to host on the source and host to
 * device on the target, as one copy and as staging-sized pieces on as many streams as mem-sync has
 * buffers.
 */
final class RawCopies {
    /** Timed raw copies of each leg in each worker process that the raw baseline samples. */
    static final int RAW_COPIES_PER_PROCESS = 3;

    private RawCopies() {}

    /**
     * Seconds of device-to-host copies on the source and host-to-device copies on the target, as
     * {@code [leg][way][trial]}: leg 0 the source's, 1 the target's; way 0 one synchronous copy, 1
     * staging-sized asynchronous copies spread over as many streams as mem-sync has buffers, with one
     * synchronize per stream (the leg as busy as mem-sync keeps it). The caller takes the faster way:
     * the baseline is the best the leg does alone, not the way mem-sync happens to use it. The source
     * first serves as many reads of the region as a warmed source does, so the baseline is as warm as
     * the warmest mem-sync.
     */
    static double[][][] seconds(Placement placement, long bytes, int trials) {
        try (VirtualGpu source = placement.openPlainOnSource(4);
                VirtualGpu target = placement.local().open(placement.targetDevice(), VaWindow.forVgpu(5))) {
            long from = source.memAlloc(bytes);
            long to = target.memAlloc(bytes);
            source.memsetD8(from, (byte) 1, bytes);
            List<StreamHandle> sourceStreams = new ArrayList<>();
            List<StreamHandle> targetStreams = new ArrayList<>();
            for (int k = 0; k < placement.config().stagingBuffers(); k++) {
                sourceStreams.add(source.streamCreate());
                targetStreams.add(target.streamCreate());
            }
            // Pinned where the native side is, as mem-sync's staging buffers are.
            VirtualGpu pinner = "native".equals(target.backendName()) ? target : source;
            MemorySegment pinned = pinner.memAllocHost(bytes);
            long piece = Math.min(bytes, placement.config().chunkBytes());
            for (int read = 0; read < MemSyncSection.WARM_UP_READS; read++) {
                source.memcpyDtoH(pinned, from, bytes);
            }
            double[][][] seconds = new double[2][2][trials];
            for (int trial = 0; trial < trials; trial++) {
                double downWhole = readSeconds(source, from, pinned, bytes, List.of());
                long start = System.nanoTime();
                target.memcpyHtoD(to, pinned, bytes);
                long upWhole = System.nanoTime() - start;
                double downPieces = readSeconds(source, from, pinned, piece, sourceStreams);
                start = System.nanoTime();
                for (long offset = 0; offset < bytes; offset += piece) {
                    long length = Math.min(piece, bytes - offset);
                    target.memcpyHtoDAsync(to + offset, pinned.asSlice(offset, length), length, targetStreams.get((int)
                            (offset / piece % targetStreams.size())));
                }
                targetStreams.forEach(target::streamSynchronize);
                long upPieces = System.nanoTime() - start;
                seconds[0][0][trial] = downWhole;
                seconds[0][1][trial] = downPieces;
                seconds[1][0][trial] = upWhole / 1e9;
                seconds[1][1][trial] = upPieces / 1e9;
            }
            pinner.memFreeHost(pinned);
            return seconds;
        }
    }

    /**
     * Seconds of one read of {@code host.byteSize()} bytes at {@code from} on {@code source} into
     * {@code host}: with no streams, one synchronous copy; otherwise asynchronous copies of
     * {@code piece} bytes spread round-robin over {@code streams}, then one synchronize per stream.
     */
    static double readSeconds(
            VirtualGpu source, long from, MemorySegment host, long piece, List<StreamHandle> streams) {
        long bytes = host.byteSize();
        long start = System.nanoTime();
        if (streams.isEmpty()) {
            source.memcpyDtoH(host, from, bytes);
        } else {
            for (long offset = 0; offset < bytes; offset += piece) {
                long length = Math.min(piece, bytes - offset);
                source.memcpyDtoHAsync(host.asSlice(offset, length), from + offset, length, streams.get((int)
                        (offset / piece % streams.size())));
            }
            streams.forEach(source::streamSynchronize);
        }
        return (System.nanoTime() - start) / 1e9;
    }
}
