package org.vgpu.migration;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.remote.client.RemoteGpu;

/**
 * Copies the live regions of a vGPU from its source to its target through host staging buffers.
 *
 * <p>Regions are packed back to back into buffers (batches), a region that straddles a buffer's end
 * split between two, so a thousand 4 KiB regions cost a few batches, not a thousand round trips.
 * Each batch is read from the source with one gathering copy (one request to a remote source,
 * however many pieces the batch holds), then written to the target with one scattering copy on the
 * buffer's own target stream (on a local GPU, small pieces in a few kernel launches rather than one
 * driver copy each). The target writes a batch while the source reads the next ones into other
 * buffers (VOCL's pipelined copy); a buffer is filled again only once the target has written it.
 *
 * <p>Reads run ahead, each on its buffer's own source stream, so a remote source always has the
 * next reads queued and its pipeline never drains between batches. That relies on how a remote
 * source waits for a stream that ends in a copy to host: for the copy's last chunk of data, not for
 * the answer to a synchronize, which a worker sends only after every request before it, the reads
 * queued ahead included (measured on H200s: with one source stream, waiting for a batch waited for
 * the batches behind it, and 16 MiB batches took 5.7 ms each where the source alone needs 4.7).
 *
 * <p>Onto a local target, reads run ahead by every buffer: a buffer's next read goes out as soon as
 * the target has written the batch that just arrived in it, which a local GPU does in a fraction of
 * the time a remote batch takes to arrive. Onto a remote target, whose writes are as slow as the
 * reads, they run ahead by all buffers but one, so that a write is never waited for right after it
 * was sent. On H200s, with one buffer fewer ahead, the request for a batch left only once the batch
 * two before it had arrived and been written, and reached the worker 0.1 to 0.8 ms later, after the
 * worker had sent everything it had been asked for: 64 MiB of 4 KiB regions waited 0.8 to 4 ms in
 * such gaps, where a raw read of 64 MiB waits 0 to 0.6 ms.
 */
final class MemorySync implements AutoCloseable {
    /** Batches a state is cut into at least, while they are not smaller than 4 KiB. */
    private static final int MIN_BATCHES = 8;
    /** Batch sizes are multiples of this, a page: a smaller one would cost a request for almost nothing. */
    private static final long BATCH_GRANULE = 4096;
    /** Halvings of the buffer size that the batches at each end of a long copy take, 1/8, 1/4 and 1/2. */
    private static final int RAMP_STEPS = 3;

    private final VirtualGpu source;
    private final VirtualGpu target;
    private final VirtualGpu stagingOwner;
    private final long bufferBytes;
    private final List<MemorySegment> buffers = new ArrayList<>();
    private final List<StreamHandle> sourceStreams = new ArrayList<>();
    private final List<StreamHandle> targetStreams = new ArrayList<>();

    private MemorySync(VirtualGpu source, VirtualGpu target, long bufferBytes) {
        this.source = source;
        this.target = target;
        this.bufferBytes = bufferBytes;
        // Pinned memory from a native side is pinned for every context of the process (unified
        // addressing), so either side's DMA runs at full bandwidth from it. Otherwise the source
        // provides it: a target that dies mid-copy must not take the buffers being cleaned up with it.
        this.stagingOwner = "native".equals(target.backendName()) ? target : source;
    }

    /**
     * Allocates the staging buffers and streams. A migration does this before it takes the lock,
     * so the app does not wait while host memory is pinned; the source may be in use meanwhile.
     *
     * @param liveBytesHint the live bytes now: buffers hold an eighth of them, up to the configured
     *                      chunk, so that a small state still makes a pipeline of several batches and
     *                      the last batch, whose write nothing overlaps, is short; a copy of more
     *                      bytes later still works, in more batches
     */
    static MemorySync prepare(VirtualGpu source, VirtualGpu target, MigrationConfig config, long liveBytesHint) {
        long bufferBytes =
                Math.clamp(Math.ceilDiv(liveBytesHint, MIN_BATCHES * 4096L) * 4096, 4096, config.chunkBytes());
        MemorySync sync = new MemorySync(source, target, bufferBytes);
        try {
            for (int k = 0; k < config.stagingBuffers(); k++) {
                sync.buffers.add(sync.stagingOwner.memAllocHost(bufferBytes));
                sync.sourceStreams.add(source.streamCreate());
                sync.targetStreams.add(target.streamCreate());
            }
        } catch (RuntimeException e) {
            try {
                sync.close();
            } catch (RuntimeException cleanupFailure) {
                e.addSuppressed(cleanupFailure);
            }
            throw e;
        }
        return sync;
    }

    /**
     * Copies {@code regions} from the source to the target; both must be idle.
     *
     * @return the bytes copied
     */
    long copy(List<DeviceRegion> regions, MigrationFaults faults) {
        List<DeviceRegion> pieces = pieces(regions);
        // a piece that straddles a batch's end is split, so every batch has its planned size
        long[] sizes = batchBytes(DeviceRegion.totalBytes(pieces), bufferBytes);
        List<List<DeviceRegion>> batches = DeviceRegion.runs(
                pieces, batch -> batch < sizes.length ? sizes[batch] : bufferBytes, Integer.MAX_VALUE);
        if (source instanceof RemoteGpu from && target instanceof RemoteGpu to) {
            return forward(batches, from, to, faults);
        }
        int readAhead = RemoteGpu.NAME.equals(target.backendName()) ? Math.max(1, buffers.size() - 1) : buffers.size();
        for (int index = 0; index < Math.min(readAhead, batches.size()); index++) {
            read(index, batches.get(index), faults);
        }
        long copied = 0;
        for (int index = 0; index < batches.size(); index++) {
            int k = index % buffers.size();
            source.streamSynchronize(sourceStreams.get(k));
            List<DeviceRegion> batch = batches.get(index);
            target.memcpyHtoDScatterAsync(batch, buffers.get(k), targetStreams.get(k));
            copied += DeviceRegion.totalBytes(batch);
            int next = index + readAhead;
            if (next < batches.size()) {
                read(next, batches.get(next), faults);
            }
        }
        for (StreamHandle stream : targetStreams) {
            target.streamSynchronize(stream);
        }
        return copied;
    }

    /**
     * Copies {@code batches} from one worker to another with each chunk sent on as it arrives
     * ({@link RemoteGpu#forwardAsync}), so the target writes a chunk while the source reads the
     * next, and no byte lands in this process's memory. The buffers bound what is in flight: a
     * batch goes out once the target has written the one its buffer carried before, so a slow
     * target holds up at most that many batches here, not the whole state. On the H100, relaying
     * through the buffers moved 40 MiB between two workers of one host at about 1 GB/s, where each
     * worker alone streams 3.5 to 4 GB/s, both at once too (2026-11-25, docs/migration-bench.md).
     */
    private long forward(List<List<DeviceRegion>> batches, RemoteGpu from, RemoteGpu to, MigrationFaults faults) {
        RemoteGpu.Forwarding[] inFlight = new RemoteGpu.Forwarding[buffers.size()];
        long copied = 0;
        for (int index = 0; index < batches.size(); index++) {
            int k = index % buffers.size();
            if (inFlight[k] != null) {
                inFlight[k].await();
                target.streamSynchronize(targetStreams.get(k));
            }
            faults.reached(FaultPoint.MEM_SYNC_BATCH, index, target);
            List<DeviceRegion> batch = batches.get(index);
            inFlight[k] = from.forwardAsync(batch, sourceStreams.get(k), to, targetStreams.get(k));
            copied += DeviceRegion.totalBytes(batch);
        }
        for (RemoteGpu.Forwarding forwarding : inFlight) {
            if (forwarding != null) {
                forwarding.await();
            }
        }
        for (StreamHandle stream : targetStreams) {
            target.streamSynchronize(stream);
        }
        return copied;
    }

    /**
     * The pieces mem-sync copies: {@code regions}, in ascending address order, with each run of
     * regions that follow one another without a gap inside one granule of the window (the small
     * allocations packed into one chunk) joined into one. 10,000 allocations of 4 KiB are 20
     * pieces of 2 MiB, so neither side's copy nor the requests between them work per allocation.
     * A join never falls on a granule's start, where one chunk's mapping may meet the next.
     */
    static List<DeviceRegion> pieces(List<DeviceRegion> regions) {
        List<DeviceRegion> pieces = new ArrayList<>(regions.size());
        DeviceRegion open = null;
        for (DeviceRegion region : regions) {
            long end = open == null ? 0 : open.address() + open.bytes();
            if (open != null && region.address() == end && end % VaWindow.GRANULARITY != 0) {
                open = new DeviceRegion(open.address(), open.bytes() + region.bytes());
            } else {
                if (open != null) {
                    pieces.add(open);
                }
                open = region;
            }
        }
        if (open != null) {
            pieces.add(open);
        }
        return pieces;
    }

    /**
     * Copies module variables, each at the same window address on both sides (the replay placed
     * them so), through the first staging buffer: programs have few, small ones (constant memory is
     * at most 64 KiB), so plain synchronous copies suffice. Both sides must be idle.
     *
     * @return the bytes copied
     */
    long copyGlobals(List<DeviceRegion> globals) {
        MemorySegment buffer = buffers.getFirst();
        long copied = 0;
        for (DeviceRegion global : globals) {
            for (long offset = 0; offset < global.bytes(); offset += bufferBytes) {
                long bytes = Math.min(bufferBytes, global.bytes() - offset);
                source.memcpyDtoH(buffer, global.address() + offset, bytes);
                target.memcpyHtoD(global.address() + offset, buffer, bytes);
                copied += bytes;
            }
        }
        return copied;
    }

    /**
     * The sizes of the batches that copy {@code total} bytes through buffers of {@code bufferBytes}:
     * full buffers, but a copy of many buffers starts with batches of 1/8, 1/4 and 1/2 of a buffer
     * and ends with the same in reverse. A pipeline's first batch is paid in full before any write
     * overlaps a read, and its last write overlaps nothing: on H200s an 8 MiB first batch of 2048
     * regions of 4 KiB took 2 to 4 ms before its first byte reached the app (the request names
     * every region, and both ends check them), and the last batch's scatter took 0.6 ms after its
     * data was in. Small end batches make both short, and the batches between keep the buffers'
     * full size, so the request count grows by six only.
     */
    static long[] batchBytes(long total, long bufferBytes) {
        List<Long> ramp = new ArrayList<>();
        for (int step = RAMP_STEPS; step > 0; step--) {
            long bytes = (bufferBytes >> step) / BATCH_GRANULE * BATCH_GRANULE;
            if (bytes > 0) {
                ramp.add(bytes);
            }
        }
        long rampBytes = ramp.stream().mapToLong(Long::longValue).sum();
        if (total < 2 * rampBytes + bufferBytes) {
            // too short to ramp: as many full buffers as it takes, the last one shorter
            long[] sizes = new long[(int) Math.max(1, Math.ceilDiv(total, bufferBytes))];
            Arrays.fill(sizes, bufferBytes);
            return sizes;
        }
        long middle = total - 2 * rampBytes;
        int full = (int) Math.ceilDiv(middle, bufferBytes);
        // the batches between the ramps share the bytes evenly, so none of them is a short one that
        // a read could not run ahead of
        long even = Math.min(bufferBytes, Math.ceilDiv(Math.ceilDiv(middle, full), BATCH_GRANULE) * BATCH_GRANULE);
        long[] sizes = new long[2 * ramp.size() + full];
        for (int k = 0; k < ramp.size(); k++) {
            sizes[k] = ramp.get(k);
            sizes[sizes.length - 1 - k] = ramp.get(k);
        }
        for (int k = 0; k < full; k++) {
            sizes[ramp.size() + k] = k < full - 1 ? even : middle - (full - 1) * even;
        }
        return sizes;
    }

    /** Starts reading batch {@code index} into its buffer, once the target has written what the buffer held before. */
    private void read(int index, List<DeviceRegion> batch, MigrationFaults faults) {
        int k = index % buffers.size();
        if (index >= buffers.size()) {
            // Reading one buffer short of all ahead, this waits for the write of the batch before the last one, long
            // done as a rule; reading all ahead, for the write of the batch that just arrived, short on a local GPU.
            target.streamSynchronize(targetStreams.get(k));
        }
        faults.reached(FaultPoint.MEM_SYNC_BATCH, index, target);
        if (source instanceof RemoteGpu remote) {
            // the buffer is neither touched nor freed before its source stream is synchronized (close waits for the
            // reads first): a striped session reads the batch's chunks straight into it
            remote.memcpyDtoHGatherAsyncIntoKeptMemory(buffers.get(k), batch, sourceStreams.get(k));
        } else {
            source.memcpyDtoHGatherAsync(buffers.get(k), batch, sourceStreams.get(k));
        }
    }

    /**
     * Waits for the source's reads, destroys the streams and frees the buffers, trying every one;
     * the first failure is rethrown.
     */
    @Override
    public void close() {
        FailureCollector cleanup = new FailureCollector();
        // A copy that failed mid-way may have reads still running into the buffers freed below. All
        // are waited for before any stream is destroyed: on a remote source a destroy would make the
        // waits that follow it ask the worker instead of watching the reads' own data.
        for (StreamHandle sourceStream : sourceStreams) {
            cleanup.attempt(() -> source.streamSynchronize(sourceStream));
        }
        for (StreamHandle sourceStream : sourceStreams) {
            cleanup.attempt(() -> source.streamDestroy(sourceStream));
        }
        sourceStreams.clear();
        for (StreamHandle targetStream : targetStreams) {
            cleanup.attempt(() -> target.streamDestroy(targetStream));
        }
        targetStreams.clear();
        for (MemorySegment buffer : buffers) {
            cleanup.attempt(() -> stagingOwner.memFreeHost(buffer));
        }
        buffers.clear();
        cleanup.rethrow();
    }

    /**
     * Reads every region back from both sides and compares them.
     *
     * @throws VgpuException VGPU_MIGRATION_FAILED naming the first differing address
     */
    static void verify(VirtualGpu source, VirtualGpu target, List<DeviceRegion> regions, MigrationConfig config) {
        List<List<DeviceRegion>> batches = DeviceRegion.runs(regions, config.chunkBytes(), Integer.MAX_VALUE);
        int bufferBytes =
                (int) batches.stream().mapToLong(DeviceRegion::totalBytes).max().orElse(1);
        byte[] expected = new byte[bufferBytes];
        byte[] actual = new byte[bufferBytes];
        for (DeviceRegion piece : batches.stream().flatMap(List::stream).toList()) {
            MemorySegment want = MemorySegment.ofArray(expected).asSlice(0, piece.bytes());
            MemorySegment got = MemorySegment.ofArray(actual).asSlice(0, piece.bytes());
            source.memcpyDtoH(want, piece.address(), piece.bytes());
            target.memcpyDtoH(got, piece.address(), piece.bytes());
            long mismatch = want.mismatch(got);
            if (mismatch >= 0) {
                throw new VgpuException(
                        ErrorCode.VGPU_MIGRATION_FAILED,
                        String.format(
                                "mem-sync verification: the target differs from the source at 0x%x",
                                piece.address() + mismatch));
            }
        }
    }
}
