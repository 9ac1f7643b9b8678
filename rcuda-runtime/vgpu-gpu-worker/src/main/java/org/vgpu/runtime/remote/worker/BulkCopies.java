package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.socket.SocketChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.protocol.SharedRegionOffer;
import org.vgpu.runtime.remote.protocol.StripeOffer;
import org.vgpu.runtime.remote.transport.BulkBytePath;
import org.vgpu.runtime.remote.transport.ChunkLabel;
import org.vgpu.runtime.remote.transport.InBandFrames;
import org.vgpu.runtime.remote.transport.ParallelCopy;
import org.vgpu.runtime.remote.transport.SameHostBulk;
import org.vgpu.runtime.remote.transport.SharedMemoryRing;
import org.vgpu.runtime.remote.transport.StripedBulk;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * A session's bulk copies, streamed through the staging slots of its vGPU: chunked requests to the
 * device ({@link Opcode#MEMCPY_HTOD}, {@link Opcode#MEMCPY_HTOD_SCATTER}) and DATA replies from it
 * ({@link Opcode#MEMCPY_DTOH}, {@link Opcode#MEMCPY_DTOH_GATHER}). The chunks' bytes travel by the session's
 * {@link BulkBytePath}: in the frames, or through a region shared with a client on this host, which the worker
 * offers in its WELCOME when the client's HELLO asked for it, and uses once the client acknowledged it in the
 * region before its first request, or striped over extra connections the client opens after WELCOME when its
 * HELLO offered them ({@link StripedStreams}). GPU thread only.
 */
final class BulkCopies {
    private static final Logger LOG = LoggerFactory.getLogger(BulkCopies.class);

    private final Channel channel;
    private final ReplyBatcher replies;
    private final KeptFailure failures;
    private final SessionHandles handles;
    /** Writes the headers of DATA chunks into their slots; the batcher's encoder is busy with the gathered replies. */
    private final ReplyEncoder dataHeaders = new ReplyEncoder();

    private VirtualGpu gpu;
    private StagingRing staging;
    /** Where the session's stripes land chunks bound for the device, when it has stripes and is open. */
    private LandingSlots landing;
    /** How chunks' bytes travel; set by the first request after WELCOME, closed when the connection closes. */
    private volatile BulkBytePath path = InBandFrames.INSTANCE;
    /** The connection's counter, which sees the frames but not the bytes of shared slots. */
    private final TrafficCounter traffic;
    /** Where a stripe connection presenting this session's key finds its stripes. */
    private final StripeJoins stripeJoins;
    /** The session's stripes, when it took them; their key is forgotten as the session closes. */
    private StripedStreams striped;
    /** The region offered in WELCOME, until the first request says whether the client took it. */
    private SharedMemoryRing offered;
    // the chunked request to the device under way, if any
    private boolean chunkOpen;
    private Opcode chunkOpcode;
    private int chunkRequestId;
    private boolean chunkAsync;
    private VgpuException chunkFailure;

    BulkCopies(
            Channel channel,
            ReplyBatcher replies,
            KeptFailure failures,
            SessionHandles handles,
            TrafficCounter traffic,
            StripeJoins stripeJoins) {
        this.channel = channel;
        this.stripeJoins = stripeJoins;
        this.traffic = traffic;
        this.replies = replies;
        this.failures = failures;
        this.handles = handles;
        // a sender waiting for a shared slot the client will never free gives up when the connection ends
        channel.closeFuture().addListener(closed -> path.close());
    }

    /**
     * The answer to {@code hello}'s offer of shared memory, for its WELCOME: a fresh region in the directory
     * {@link SameHostBulk#directory()} names, or none and why.
     */
    SharedRegionOffer offerSharedRegion(Hello hello) {
        if (!hello.offersSharedMemory()) {
            return SharedRegionOffer.none("the client did not offer shared memory");
        }
        Optional<Path> directory = SameHostBulk.directory();
        if (directory.isEmpty()) {
            return SharedRegionOffer.none("-D" + SameHostBulk.PROPERTY + "=off on the worker");
        }
        try {
            offered = SharedMemoryRing.create(directory.get(), SameHostBulk.SLOTS, slotBytes());
            return new SharedRegionOffer(offered.file().toString(), offered.nonce(), "");
        } catch (IOException | RuntimeException e) {
            String why = "no shared region in " + directory.get() + ": " + VgpuFailure.describe(e);
            LOG.info("bulk bytes in-band: {}", why);
            return SharedRegionOffer.none(why);
        }
    }

    /**
     * Whether the session's client is on this host, so that it can map this host's files: it is when it reaches the
     * worker through a Unix domain socket, or when its HELLO offered shared memory (it believes the worker shares its
     * host; one that does not cannot open the files, and the regions' bound holds whatever it asks for).
     */
    boolean clientOnThisHost(Hello hello) {
        return hello.offersSharedMemory() || !(channel instanceof SocketChannel);
    }

    /**
     * The answer to {@code hello}'s offer of stripes, for its WELCOME: none when it offered none, when shared memory
     * is offered instead ({@code region}), when this worker takes none or the session is not on TCP; else stripes,
     * as many as the client offered up to this worker's count, which carry the session's chunks from now on.
     *
     * @param patience how long a chunk may lag behind its frame, and a stripe take to join
     */
    StripeOffer offerStripes(Hello hello, SharedRegionOffer region, Duration patience) {
        if (hello.stripes() == 0) {
            return StripeOffer.none(StripeOffer.NOT_ASKED);
        }
        if (region.offered()) {
            return StripeOffer.none("the worker offers shared memory instead");
        }
        if (!(channel instanceof SocketChannel)) {
            return StripeOffer.none("the session is not on TCP");
        }
        int count = StripedBulk.taken() ? Math.min(hello.stripes(), StripedBulk.stripes()) : 0;
        if (count == 0) {
            return StripeOffer.none("-D" + StripedBulk.MODE_PROPERTY + "=off on the worker");
        }
        StripedStreams stripes = new StripedStreams(
                count, patience, failure -> channel.pipeline().fireExceptionCaught(failure));
        String key = stripeJoins.register(stripes);
        striped = stripes;
        path = stripes;
        LOG.debug("bulk bytes: {}", stripes.describe());
        return new StripeOffer(count, key, "");
    }

    /**
     * The shared slot size: the staging slot's, rounded up to whole pages. A chunk still passes through a staging
     * slot between the shared one and the device, since {@link VirtualGpu} has no way to page-lock memory it did
     * not allocate (CUDA's {@code cuMemHostRegister}); with one, the region would be registered as it is created
     * and the device would copy straight from and into the shared slots.
     */
    private static int slotBytes() {
        return Math.ceilDiv(StagingRing.SLOT_BYTES, 4096) * 4096;
    }

    /** The first request after WELCOME: the client acknowledged the offered region by now, or never will. */
    private void settlePath() {
        SharedMemoryRing region = offered;
        offered = null;
        if (region.acknowledged()) {
            path = region;
        } else {
            region.close();
        }
        try {
            region.unlink();
        } catch (IOException e) {
            LOG.warn("cannot remove the shared region {}: {}", region.file(), VgpuFailure.describe(e));
        }
    }

    /** How this session's chunks travel, for tests and the benchmark's header. */
    BulkBytePath path() {
        return path;
    }

    /**
     * Pins the staging slots of {@code opened}, after the offers of {@link #offerStripes}: that takes milliseconds,
     * paid when the session opens rather than by its first bulk copy, which may be a migration reading the vGPU while
     * its app is stopped.
     */
    void open(VirtualGpu opened) {
        gpu = opened;
        staging = newStagingRing(opened);
        if (striped != null && RemoteTuning.current().landStripedChunks()) {
            landing = new LandingSlots(opened, striped.stripes(), StagingRing.SLOT_BYTES);
            striped.landIn(landing);
        }
    }

    /** As many slots as the session's stripes keep busy, when it has stripes ({@link #offerStripes} decides first). */
    private StagingRing newStagingRing(VirtualGpu on) {
        return new StagingRing(on, striped == null ? StagingRing.SLOTS : StagingRing.slotsFor(striped.stripes()));
    }

    /** Frees the staging slots, before the vGPU that owns them closes. */
    void close() {
        if (offered != null) {
            settlePath();
        }
        path.close();
        if (striped != null) {
            stripeJoins.forget(striped);
        }
        StagingRing ring = staging;
        staging = null;
        LandingSlots landed = landing;
        landing = null;
        gpu = null;
        try {
            if (landed != null) {
                landed.close();
            }
        } finally {
            if (ring != null) {
                ring.close();
            }
        }
    }

    /**
     * Refuses a frame other than the next chunk while a chunked request is open.
     *
     * @return whether {@code frame} starts a request, rather than continuing a chunked one
     */
    boolean startsRequest(Frame frame) {
        if (offered != null) {
            settlePath();
        }
        if (chunkOpen && (frame.opcode() != chunkOpcode || frame.requestId() != chunkRequestId)) {
            throw Frames.violation(frame + " arrived inside the chunked copy of request " + chunkRequestId);
        }
        return !chunkOpen;
    }

    // ---- to the device

    void memcpyHtoD(Frame frame, int streamId, long dst, ByteBuf trailer) {
        ByteBuf data = chunkOf(frame, trailer);
        try {
            memcpyHtoDChunk(frame, streamId, dst, data);
        } finally {
            release(data);
        }
    }

    /** Releases a chunk's buffer, and its landing slot when the device's copy was not queued from it. */
    private void release(ByteBuf data) {
        try {
            if (landing != null) {
                landing.doneWith(data);
            }
        } finally {
            data.release();
        }
    }

    /** The bytes of a chunk to the device, counted when they came through a shared slot. */
    private ByteBuf chunkOf(Frame frame, ByteBuf trailer) {
        BulkBytePath current = path;
        ByteBuf data = current.chunkOf(frame, trailer);
        if (current.frameFlags() != 0) {
            traffic.sharedIn(data.readableBytes());
        }
        return data;
    }

    private void memcpyHtoDChunk(Frame frame, int streamId, long dst, ByteBuf data) {
        copyChunkToDevice(frame, streamId, stream -> {
            if (!data.isReadable()) {
                // a copy of 0 bytes still checks its pointer, as on a local vGPU
                gpu().memcpyHtoD(dst, MemorySegment.NULL, 0);
            }
            // the whole chunk, checked before its first slot is copied: a chunk that does not fit writes nothing
            gpu().checkDeviceRegions(List.of(new DeviceRegion(dst, data.readableBytes())), "memcpyHtoD destination");
            stageToDevice(dst, data, stream);
        });
    }

    void memcpyHtoDScatter(Frame frame, int streamId, List<DeviceRegion> pieces, ByteBuf trailer) {
        ByteBuf data = chunkOf(frame, trailer);
        try {
            if (data.readableBytes() != DeviceRegion.totalBytes(pieces)) {
                throw Frames.violation(frame.opcode() + " carries " + data.readableBytes() + " bytes for pieces of "
                        + DeviceRegion.totalBytes(pieces) + " bytes");
            }
            copyChunkToDevice(frame, streamId, stream -> {
                gpu().checkDeviceRegions(pieces, "memcpyHtoDScatter destination");
                stageScatterToDevice(pieces, data, stream);
            });
        } finally {
            release(data);
        }
    }

    /**
     * One chunk of a copy to the device: {@code stage} queues it on the stream the request runs on;
     * the request is answered, or its failure kept, after its last chunk, and a failed chunk makes
     * the rest of the request skip.
     */
    private void copyChunkToDevice(Frame frame, int streamId, Consumer<StreamHandle> stage) {
        if (!chunkOpen) {
            chunkOpcode = frame.opcode();
            chunkRequestId = frame.requestId();
            chunkAsync = frame.isAsync();
            chunkFailure = chunkAsync ? null : failures.take();
        } else if (frame.isAsync() != chunkAsync) {
            throw Frames.violation("chunks of request " + chunkRequestId + " disagree on being asynchronous");
        }
        chunkOpen = frame.hasMore();
        if (chunkFailure == null) {
            try {
                StreamHandle stream = handles.stream(streamId);
                stage.accept(chunkAsync ? stream : StreamHandle.DEFAULT);
                if (!chunkOpen && !chunkAsync) {
                    staging().awaitDevice();
                    if (landing != null) {
                        landing.awaitDevice();
                    }
                }
            } catch (RuntimeException e) {
                chunkFailure = KeptFailure.asVgpuException(e);
            }
        }
        if (!chunkOpen) {
            if (chunkFailure != null) {
                failures.failed(frame, chunkFailure);
            } else if (!chunkAsync) {
                replies.reply().ok(frame.requestId());
            }
            chunkFailure = null;
        }
    }

    /**
     * Copies a chunk to the device through the staging slots: its pieces (a large chunk arrives in
     * several buffers, see {@link org.vgpu.runtime.remote.protocol.FrameDecoder}) are gathered into
     * a slot, whose copy then runs on {@code stream} while the next chunk is received and staged. A
     * chunk a stripe landed in a {@link LandingSlots} slot is copied by the device from there instead.
     * The frame may be released at once. A synchronous copy is an asynchronous one on the default
     * stream that its last chunk waits for, as CUDA's synchronous copy orders itself.
     */
    private void stageToDevice(long dst, ByteBuf data, StreamHandle stream) {
        if (landing != null && landing.copyToDevice(data, dst, stream)) {
            // a stripe landed the chunk in page-locked memory already: the device copies it from there
            return;
        }
        int start = data.readerIndex();
        int length = data.readableBytes();
        for (int offset = 0; offset < length; ) {
            int piece = Math.min(StagingRing.SLOT_BYTES, length - offset);
            long to = dst + offset;
            stageSlot(data, start + offset, piece, stream, host -> gpu().memcpyHtoDAsync(to, host, piece, stream));
            offset += piece;
        }
    }

    /** As {@link #stageToDevice}, each slot's bytes scattered to the pieces they belong to (by the copy kernels, on a GPU). */
    private void stageScatterToDevice(List<DeviceRegion> pieces, ByteBuf data, StreamHandle stream) {
        int offset = data.readerIndex();
        for (List<DeviceRegion> run : DeviceRegion.runs(pieces, StagingRing.SLOT_BYTES, Integer.MAX_VALUE)) {
            int bytes = (int) DeviceRegion.totalBytes(run);
            stageSlot(data, offset, bytes, stream, host -> gpu().memcpyHtoDScatterAsync(run, host, stream));
            offset += bytes;
        }
    }

    /**
     * Copies {@code bytes} of {@code data} from {@code index} into the next free slot (several threads at once for a
     * large chunk: on the GPU thread alone this copy capped striped copies) and queues {@code deviceCopy} of them on
     * {@code stream}.
     */
    private void stageSlot(
            ByteBuf data, int index, int bytes, StreamHandle stream, Consumer<MemorySegment> deviceCopy) {
        StagingRing.Slot slot = staging().acquire();
        MemorySegment host = slot.memory(bytes);
        ParallelCopy.shared().copy(data, index, bytes, host, 0);
        deviceCopy.accept(host);
        slot.deviceCopyQueued(stream);
    }

    // ---- from the device

    void memcpyDtoH(Frame frame, int streamId, long src, long bytes, int chunkBytes) {
        if (failures.answeredWithKeptFailure(frame)) {
            return;
        }
        try {
            StreamHandle stream = handles.stream(streamId);
            if (bytes < 0) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "byte count must be >= 0, got " + bytes);
            }
            sendFromDevice(frame, List.of(new DeviceRegion(src, bytes)), "memcpyDtoH source", chunkBytes, stream);
        } catch (RuntimeException e) {
            failedToSend(frame, e);
        }
    }

    void memcpyDtoHGather(Frame frame, int streamId, int chunkBytes, List<DeviceRegion> regions) {
        if (failures.answeredWithKeptFailure(frame)) {
            return;
        }
        try {
            StreamHandle stream = handles.stream(streamId);
            sendFromDevice(frame, regions, "memcpyDtoHGather source", chunkBytes, stream);
        } catch (RuntimeException e) {
            failedToSend(frame, e);
        }
    }

    /** A device-to-host request that failed, maybe after some of its DATA: it is answered even when asynchronous. */
    private void failedToSend(Frame frame, RuntimeException e) {
        VgpuException failure = KeptFailure.asVgpuException(e);
        if (frame.isAsync()) {
            // the client still waits for this request's end; the failure is also kept for the next sync
            replies.reply().error(frame.requestId(), failure);
        }
        failures.failed(frame, failure);
    }

    /**
     * Sends the bytes of {@code regions}, back to back, as DATA chunks through the staging slots: the
     * device copies the next chunk into its slot (one gathering copy of the pieces of the regions it
     * holds) while the previous one is written to the socket straight from its slot, with no copy
     * into a Netty buffer. A synchronous copy is an asynchronous one on the default stream whose
     * chunks each wait for the device. Returns once the last chunk is handed to the socket, not once
     * it is written: the next request's first gather then runs while this one's last chunks are still
     * going out, instead of in a pause of the socket between the two (on H200s, 0.3 ms per request
     * of a mem-sync of 4 KiB regions). A slot is still not reused, nor freed when the session ends,
     * before the socket is done with it ({@link StagingRing#acquire}, {@link StagingRing#close}).
     *
     * <p>The last chunk of an asynchronous copy says whether an asynchronous failure is kept: if not,
     * the client knows from that chunk alone that the copy's stream has finished without error.
     */
    private void sendFromDevice(
            Frame frame, List<DeviceRegion> regions, String what, int chunkBytes, StreamHandle asyncStream) {
        // the whole request, checked before a chunk is cut: a size no allocation holds is refused at once
        gpu().checkDeviceRegions(regions, what);
        replies.flush();
        int requestId = frame.requestId();
        StreamHandle stream = frame.isAsync() ? asyncStream : StreamHandle.DEFAULT;
        // regions of 0 bytes go with a chunk too: their pointers are checked, as on a local vGPU;
        // chunks are cut one at a time, as many regions may each name a whole allocation
        Iterator<List<DeviceRegion>> chunks =
                DeviceRegion.runsOneByOne(regions, Math.min(chunkBytes, StagingRing.SLOT_BYTES), Integer.MAX_VALUE);
        StagingRing ring = staging();
        StagingRing.Slot copied = null;
        long copiedOffset = 0;
        int copiedLength = 0;
        long offset = 0;
        do {
            List<DeviceRegion> pieces = chunks.hasNext() ? chunks.next() : List.of();
            int chunk = (int) DeviceRegion.totalBytes(pieces);
            StagingRing.Slot slot = ring.acquire();
            gpu().memcpyDtoHGatherAsync(slot.memory(chunk), pieces, stream);
            slot.deviceCopyQueued(stream);
            if (copied != null) {
                sendSlot(requestId, copied, copiedOffset, copiedLength, true, false);
            }
            copied = slot;
            copiedOffset = offset;
            copiedLength = chunk;
            offset += chunk;
            // a client that left reads nothing more: the rest of its copy is not made
        } while (chunks.hasNext() && channel.isActive());
        sendSlot(requestId, copied, copiedOffset, copiedLength, false, frame.isAsync() && failures.isKept());
    }

    /**
     * Writes one DATA chunk whose bytes are in {@code slot} once the device is done with it, with its
     * header in the slot's room in front of them: one buffer, one write.
     */
    private void sendSlot(
            int requestId, StagingRing.Slot slot, long offset, int length, boolean more, boolean failureKept) {
        slot.awaitDevice();
        BulkBytePath bytesPath = path;
        if (bytesPath.frameFlags() != 0) {
            sendThrough(bytesPath, requestId, slot, offset, length, more, failureKept);
            return;
        }
        awaitWritable();
        ByteBuf chunk = Unpooled.wrappedBuffer(
                slot.withHeader(ReplyEncoder.dataHeaderBytes(), length).asByteBuffer());
        chunk.writerIndex(0);
        dataHeaders.wrap(chunk).dataHeader(requestId, more, failureKept, offset, length);
        chunk.writerIndex(chunk.capacity());
        slot.sending();
        channel.writeAndFlush(chunk).addListener(written -> slot.written());
    }

    /**
     * Writes one DATA chunk whose bytes go by {@code bytesPath}, not in the frame: they are handed to the path
     * (which waits for room), and the frame carries the path's trailer. The staging slot is free again once the path
     * is done with it: at once through shared memory, which copies the bytes into its own slot; once the socket took
     * them through the stripes, which send the staging slot's pinned memory as it is.
     */
    private void sendThrough(
            BulkBytePath bytesPath,
            int requestId,
            StagingRing.Slot slot,
            long offset,
            int length,
            boolean more,
            boolean failureKept) {
        ByteBuf trailer;
        try {
            slot.sending();
            trailer = bytesPath.sendBorrowed(
                    slot.memory(length), 0, length, new ChunkLabel(requestId, offset), slot::written);
            traffic.sharedOut(length);
        } catch (IllegalStateException closed) {
            // the client left while the chunk waited for a slot: nobody reads the rest of the copy
            return;
        }
        try {
            ByteBuf frame = channel.alloc().buffer(ReplyEncoder.dataHeaderBytes() + trailer.readableBytes());
            dataHeaders
                    .wrap(frame)
                    .dataHeader(requestId, more, failureKept, bytesPath.frameFlags(), offset, trailer.readableBytes());
            frame.writeBytes(trailer);
            awaitWritable();
            channel.writeAndFlush(frame, channel.voidPromise());
        } finally {
            trailer.release();
        }
    }

    /** Lets a chunked reply wait while the connection's outbound buffer is full, instead of piling up memory. */
    private void awaitWritable() {
        while (!channel.isWritable() && channel.isActive()) {
            LockSupport.parkNanos(this, 1_000_000);
        }
    }

    private VirtualGpu gpu() {
        if (gpu == null) {
            throw Frames.violation("a request arrived before the session was opened");
        }
        return gpu;
    }

    private StagingRing staging() {
        if (staging == null) {
            staging = newStagingRing(gpu());
        }
        return staging;
    }
}
