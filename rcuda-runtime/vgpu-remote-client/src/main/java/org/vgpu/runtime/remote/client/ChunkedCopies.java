package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.transport.BulkBytePath;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.InBandFrames;
import org.vgpu.runtime.remote.transport.ParallelCopy;

/**
 * Copies between the caller's host memory and the worker's device over one connection. Large
 * copies travel in pipelined chunks: host-to-device chunks are flushed as they are queued and
 * sent from the caller's native memory without a copy; a device-to-host copy is one request whose
 * DATA chunks land in the caller's memory as they arrive ({@link ChunkLanding}). Through a path that writes a
 * chunk's bytes after its frame (the stripes), the caller's native memory is sent as it is too, on the same terms.
 */
final class ChunkedCopies {
    /** Below this a host-to-device chunk is copied into the batch; above, the caller's native memory is sent as it is. */
    private static final int ZERO_COPY_MIN_BYTES = 64 << 10;

    private final RemoteConfig config;
    private final RequestBatcher batcher;
    private final WaitingCalls calls;
    private final ConnectionLoss loss;
    private final ChunkLanding landing;
    /** How chunks' bytes travel: chosen once as the session opens, before the first copy. */
    private volatile BulkBytePath bulkPath = InBandFrames.INSTANCE;
    /** Where the stripes read the chunks of a copy to host straight in, when they do; set with the stripes. */
    private volatile StraightDestinations straight;
    /**
     * Streams whose last request is an asynchronous device-to-host copy, with that copy: until any
     * other request is sent (one that might add work to the stream), the copy's last chunk of data
     * tells that the stream is done, so a synchronize of it need not queue behind later requests.
     * Guarded by the batch lock, since it follows the order of requests on the wire.
     */
    private final Map<Integer, PendingCopyToHost> streamsEndingInCopyToHost = new HashMap<>();

    ChunkedCopies(
            RemoteConfig config,
            RequestBatcher batcher,
            WaitingCalls calls,
            ConnectionLoss loss,
            ChunkLanding landing) {
        this.config = config;
        this.batcher = batcher;
        this.calls = calls;
        this.loss = loss;
        this.landing = landing;
    }

    /** Sends and receives the chunks' bytes through {@code path} from now on; as the session opens. */
    void useBulkPath(BulkBytePath path) {
        bulkPath = path;
    }

    /** Has the stripes read the chunks of copies to host straight into the caller's memory where they may. */
    void readStraightInto(StraightDestinations destinations) {
        straight = destinations;
    }

    /** How many chunks of copies to host the stripes read straight into the caller's memory. */
    long chunksReadStraightIn() {
        StraightDestinations destinations = straight;
        return destinations == null ? 0 : destinations.straightChunks();
    }

    /** How chunks' bytes travel. */
    BulkBytePath bulkPath() {
        return bulkPath;
    }

    /** Another request was added to the batch; it may add work to any stream. Batch lock held. */
    void requestAppended() {
        streamsEndingInCopyToHost.clear();
    }

    // ---- host to device

    /**
     * A host-to-device copy in chunks, each flushed as soon as it is queued so the worker copies one
     * while the next travels. Native host memory is sent without a copy: a synchronous copy waits for
     * the last chunk's acknowledgement, and an asynchronous one may rely on the caller keeping the
     * memory valid until it synchronizes, as with CUDA.
     */
    void copyToDevice(long dst, MemorySegment src, long bytes, int streamId, boolean async) {
        int chunkBytes = chunkBytes();
        int[] lengths = new int[(int) Math.max(1, Math.ceilDiv(bytes, chunkBytes))];
        for (int chunk = 0; chunk < lengths.length; chunk++) {
            lengths[chunk] = (int) Math.min(chunkBytes, bytes - (long) chunk * chunkBytes);
        }
        copyChunksToDevice(
                src,
                lengths,
                async,
                true,
                (encoder, requestId, more, chunk, offset, length) ->
                        encoder.memcpyHtoDChunkHeader(requestId, async, more, streamId, dst + offset, length));
    }

    /**
     * Packed host bytes written to many device regions as one request, chunked as {@link #copyToDevice}
     * is, each chunk naming the pieces of the regions its bytes go to. No regions send nothing.
     */
    void scatterToDevice(List<DeviceRegion> regions, MemorySegment src, int streamId, boolean async) {
        scatterToDevice(regions, src, streamId, async, true);
    }

    /** As above; {@code borrowable}: the caller keeps {@code src} until the copy is acknowledged or synchronized. */
    private void scatterToDevice(
            List<DeviceRegion> regions, MemorySegment src, int streamId, boolean async, boolean borrowable) {
        List<List<DeviceRegion>> chunks = DeviceRegion.runs(regions, chunkBytes(), RequestDecoder.MAX_SCATTER_PIECES);
        if (chunks.isEmpty()) {
            return;
        }
        int[] lengths = new int[chunks.size()];
        for (int chunk = 0; chunk < lengths.length; chunk++) {
            lengths[chunk] = (int) DeviceRegion.totalBytes(chunks.get(chunk));
        }
        copyChunksToDevice(
                src,
                lengths,
                async,
                borrowable,
                (encoder, requestId, more, chunk, offset, length) -> encoder.memcpyHtoDScatterChunkHeader(
                        requestId, async, more, streamId, chunks.get(chunk), length));
    }

    /** The chunk size of copies to the device: the configured one, or less where a chunk of the bulk path holds less. */
    private int chunkBytes() {
        return Math.min(config.chunkBytes(), bulkPath.maxChunkBytes());
    }

    /** Writes the header of chunk {@code chunk}, whose {@code length} bytes start at {@code offset} of the source. */
    @FunctionalInterface
    private interface ChunkHeader {
        void write(RequestEncoder encoder, int requestId, boolean more, int chunk, long offset, int length);
    }

    /** Sends one request to the device as chunks of {@code lengths} bytes of {@code src}, back to back. */
    private void copyChunksToDevice(
            MemorySegment src, int[] lengths, boolean async, boolean borrowable, ChunkHeader header) {
        PendingCall<Void> call = async ? null : new PendingCall<>(ReplyDecoder::empty);
        batcher.lock();
        try {
            loss.checkAlive();
            int id = batcher.nextId();
            if (call != null) {
                calls.register(id, call);
            }
            streamsEndingInCopyToHost.clear();
            long offset = 0;
            try {
                BulkBytePath path = bulkPath;
                for (int chunk = 0; chunk < lengths.length; chunk++) {
                    int length = lengths[chunk];
                    boolean more = chunk + 1 < lengths.length;
                    if (path.frameFlags() != 0) {
                        // the slot first: the path may wait for room, and the frame must not name it before it is
                        // filled
                        // memory the caller keeps until the copy is acknowledged or synchronized, as in-band, may
                        // be sent as it is by a path that writes it later (the stripes)
                        ChunkLabel label = new ChunkLabel(id, offset);
                        ByteBuf trailer = borrowable && src.isNative() && ParallelCopy.isShared(src)
                                ? path.sendBorrowed(src, offset, length, label, () -> {})
                                : path.send(src, offset, length, label);
                        int start = batcher.frameStart();
                        header.write(batcher.frameEncoder(), id, more, chunk, offset, trailer.readableBytes());
                        batcher.addFlags(start, path.frameFlags());
                        batcher.appendAsIs(trailer);
                        batcher.sentOutsideFrames(length);
                    } else if (src.isNative() && ParallelCopy.isShared(src) && length >= ZERO_COPY_MIN_BYTES) {
                        header.write(batcher.frameEncoder(), id, more, chunk, offset, length);
                        batcher.appendAsIs(Unpooled.wrappedBuffer(
                                src.asSlice(offset, length).asByteBuffer()));
                    } else {
                        RequestEncoder frame = batcher.frameEncoder();
                        header.write(frame, id, more, chunk, offset, length);
                        frame.chunkBytes(src, offset, length);
                    }
                    batcher.frameAdded();
                    offset += length;
                    // a chunk in a shared slot goes out at once: its slot is free again only once the worker read the
                    // frame, and the next chunk may wait for that slot
                    if (more || !async || batcher.full() || path.frameFlags() != 0) {
                        batcher.flush();
                    }
                }
            } catch (RuntimeException e) {
                calls.forget(id);
                throw e;
            }
        } finally {
            batcher.unlock();
        }
        if (call != null) {
            calls.await(call, Long.MAX_VALUE);
        }
    }

    // ---- device to host

    /** A device-to-host copy; its chunks land in {@code dst} as they arrive. */
    void copyToHost(MemorySegment dst, long src, long bytes, int streamId, boolean async) {
        copyToHost(
                dst,
                bytes,
                streamId,
                async,
                !async,
                (encoder, requestId) ->
                        encoder.memcpyDtoH(requestId, async, streamId, src, bytes, config.chunkBytes()));
    }

    /**
     * Device-to-host copies of many regions as one request; the regions' bytes land in {@code dst} back to back.
     *
     * @param keptMemory the caller keeps {@code dst} allocated and untouched until the copy's stream is synchronized
     *     with success or the session closes ({@link RemoteGpu#memcpyDtoHGatherAsyncIntoKeptMemory})
     */
    void gatherToHost(MemorySegment dst, List<DeviceRegion> regions, int streamId, boolean async, boolean keptMemory) {
        copyToHost(
                dst,
                DeviceRegion.totalBytes(regions),
                streamId,
                async,
                keptMemory || !async,
                (encoder, requestId) ->
                        encoder.memcpyDtoHGather(requestId, async, streamId, config.chunkBytes(), regions));
    }

    /**
     * A gather whose chunks go to {@code sink} as they arrive ({@link RemoteGpu#forwardAsync}), queued
     * on stream {@code streamId}.
     *
     * @return the copy, to {@link #awaitForwarded await}
     */
    PendingCopyToHost forwardGather(List<DeviceRegion> regions, int streamId, PendingCopyToHost.ChunkSink sink) {
        PendingCopyToHost copy = PendingCopyToHost.forwarding(sink, DeviceRegion.totalBytes(regions));
        batcher.lock();
        try {
            loss.checkAlive();
            calls.append(
                    batcher,
                    (encoder, requestId) ->
                            encoder.memcpyDtoHGather(requestId, true, streamId, config.chunkBytes(), regions),
                    copy);
            streamsEndingInCopyToHost.put(streamId, copy);
            batcher.flush();
        } finally {
            batcher.unlock();
        }
        return copy;
    }

    /**
     * Waits until every chunk of a forwarded gather was read here and handed on.
     *
     * @throws VgpuException what failed: the read, or the destination's taking a chunk
     */
    void awaitForwarded(PendingCopyToHost copy) {
        calls.await(copy, Long.MAX_VALUE);
        copy.throwIfDestinationFreed();
    }

    /**
     * Sends {@code data}, forwarded from another connection, as one asynchronous host-to-device
     * request into {@code pieces} on stream {@code streamId}: its bytes go out as they are, not copied
     * (through a shared region: copied into its slots, in chunks of a slot at most).
     * Takes {@code data} over, sent or not.
     */
    void forwardedToDevice(List<DeviceRegion> pieces, ByteBuf data, int streamId) {
        if (bulkPath.frameFlags() != 0) {
            try {
                // released below, before the copy is acknowledged: the path copies it
                scatterToDevice(pieces, MemorySegment.ofBuffer(data.nioBuffer()), streamId, true, false);
            } finally {
                data.release();
            }
            return;
        }
        boolean handedOver = false;
        batcher.lock();
        try {
            loss.checkAlive();
            int id = batcher.nextId();
            streamsEndingInCopyToHost.clear();
            batcher.frameEncoder()
                    .memcpyHtoDScatterChunkHeader(id, true, false, streamId, pieces, data.readableBytes());
            batcher.appendAsIs(data);
            handedOver = true;
            batcher.frameAdded();
            batcher.flush();
        } finally {
            batcher.unlock();
            if (!handedOver) {
                data.release();
            }
        }
    }

    /**
     * Sends {@code request}, whose reply is {@code bytes} of DATA for {@code dst}.
     *
     * @param keptMemory {@code dst} stays allocated while the copy is in flight: the caller waits in it (synchronous),
     *     or promised so ({@link #gatherToHost})
     */
    private void copyToHost(
            MemorySegment dst,
            long bytes,
            int streamId,
            boolean async,
            boolean keptMemory,
            WorkerConnection.Request request) {
        PendingCopyToHost copy = new PendingCopyToHost(dst, bytes);
        if (copy.heldForOwner()) {
            landing.hold(copy);
        }
        StraightDestinations readStraight = null;
        int id = 0;
        batcher.lock();
        try {
            loss.checkAlive();
            StraightDestinations destinations = straight;
            id = calls.append(batcher, request, copy);
            if (destinations != null
                    && keptMemory
                    && dst.isNative()
                    && ParallelCopy.isShared(dst)
                    && bytes >= ZERO_COPY_MIN_BYTES
                    && overtakesNothing(copy, dst)) {
                destinations.expect(id, copy, dst);
                readStraight = destinations;
            }
            if (async) {
                streamsEndingInCopyToHost.put(streamId, copy);
            } else {
                streamsEndingInCopyToHost.clear();
            }
            // A copy of a chunk or more goes out now, so the worker starts on it while the app issues more
            // (mem-sync issues three reads of up to 2048 regions each before it first waits).
            if (!async || batcher.full() || bytes >= config.chunkBytes()) {
                batcher.flush();
            }
        } catch (RuntimeException e) {
            landing.forget(copy);
            if (readStraight != null) {
                readStraight.forget(id);
            }
            throw e;
        } finally {
            batcher.unlock();
        }
        if (!async) {
            try {
                calls.await(copy, Long.MAX_VALUE);
            } finally {
                if (readStraight != null) {
                    readStraight.forget(id);
                }
            }
            copy.throwIfDestinationFreed();
        }
    }

    /**
     * Whether {@code copy}'s chunks, read straight into {@code dst} on all stripes at once and before their frames,
     * would write memory that no other copy to host writes meanwhile: none waiting for its data, then (a copy that
     * no longer waits handed all its chunks off before) none landing or held for its owner thread. A later copy into
     * the same memory lands only after this one's frames, so after its chunks arrived. Batch lock held, so no copy
     * starts meanwhile.
     */
    private boolean overtakesNothing(PendingCopyToHost copy, MemorySegment dst) {
        return !calls.copyToHostWritingInto(dst, copy) && !landing.writesInto(dst);
    }

    /**
     * Waits for stream {@code streamId} without a request, if the last request on the connection
     * that could add work to it was an asynchronous device-to-host copy on it: the worker runs a
     * stream's work in order and sends the copy's data after it, so its last chunk means the stream
     * is done. Unlike a synchronize, which the worker answers only after every request sent before
     * it, this does not wait for later requests on other streams (reads queued ahead, say).
     *
     * @return false when the worker must be asked after all: there is no such copy, it failed, or
     *         the worker keeps an asynchronous failure that the synchronize must report
     */
    boolean awaitStreamEndingInCopyToHost(int streamId) {
        PendingCopyToHost copy;
        batcher.lock();
        try {
            copy = streamsEndingInCopyToHost.get(streamId);
            if (copy == null) {
                return false;
            }
            loss.checkAlive();
            batcher.flush();
        } finally {
            batcher.unlock();
        }
        try {
            calls.await(copy, Long.MAX_VALUE);
            copy.throwIfDestinationFreed();
        } catch (VgpuException failed) {
            return false;
        }
        return !copy.failureKept();
    }
}
