package org.vgpu.runtime.remote.worker;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.protocol.RequestVisitor;
import org.vgpu.runtime.remote.protocol.Welcome;

/**
 * The GPU thread of one session: takes the session's request frames from a queue, in order, and
 * executes them on the worker's local {@link VirtualGpu}, which re-validates everything (the
 * client is never trusted). Only this thread touches the vGPU, so its context and handle maps need
 * no locks; only the event loop touches the channel's pipeline, so replies are handed to it by
 * {@link Channel#writeAndFlush}, gathered into one buffer while more requests are queued.
 *
 * <p>Asynchronous requests get no reply on success; the first failure among them is kept and
 * answered to the next synchronizing request instead of executing it, as CUDA reports an earlier
 * asynchronous error at the next synchronizing call.
 */
final class SessionExecutor implements RequestVisitor, Runnable {
    /** Above this many queued request bytes the event loop stops reading, so a fast client cannot fill the heap. */
    static final long PAUSE_READING_BYTES = 32L << 20;
    static final long RESUME_READING_BYTES = 8L << 20;
    /** Gathered replies go out at this size even while requests keep coming. */
    private static final int REPLY_FLUSH_BYTES = 64 << 10;
    private static final Object END = new Object();

    /** How the session ended, for the worker's report. */
    record Outcome(long calls, long busyNanos, boolean clean, String reason) {
    }

    private final Channel channel;
    private final GpuBackend backend;
    private final WorkerConfig config;
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicBoolean readingPaused = new AtomicBoolean();
    private final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
    private final ReplyEncoder replies = new ReplyEncoder();
    private volatile Thread thread;
    private volatile String endReason;
    /** Set once the GPU thread is done: frames that still arrive are released at once. */
    private volatile boolean finished;

    // ---- GPU thread only
    private VirtualGpu gpu;
    /** Made when the session opens. */
    private StagingRing staging;
    private final Map<Integer, ModuleHandle> modules = new HashMap<>();
    private final Map<Integer, FunctionHandle> functions = new HashMap<>();
    private final Map<Integer, StreamHandle> streams = new HashMap<>();
    private final Map<Integer, EventHandle> events = new HashMap<>();
    private VgpuException deferred;
    private ByteBuf pendingReplies;
    private boolean chunkOpen;
    private Opcode chunkOpcode;
    private int chunkRequestId;
    private boolean chunkAsync;
    private VgpuException chunkFailure;
    private boolean stopping;
    private boolean clean;
    private long calls;
    private long busyNanos;

    SessionExecutor(Channel channel, GpuBackend backend, WorkerConfig config) {
        this.channel = channel;
        this.backend = backend;
        this.config = config;
    }

    /** Starts the GPU thread. */
    void start() {
        Thread gpuThread = new Thread(this, "vgpu-worker-gpu-" + config.device());
        gpuThread.setDaemon(true);
        thread = gpuThread;
        gpuThread.start();
    }

    CompletableFuture<Outcome> outcome() {
        return outcome;
    }

    // ---- event loop side

    /** Queues a request frame; the GPU thread releases it. Called on the event loop. */
    void submit(Frame frame) {
        long queued = queuedBytes.addAndGet(frame.body().readableBytes());
        queue.add(frame);
        if (finished) {
            releaseQueued();
            return;
        }
        if (queued > PAUSE_READING_BYTES && readingPaused.compareAndSet(false, true)) {
            channel.config().setAutoRead(false);
        }
    }

    /**
     * Ends the session: the client is gone or broke the rules, so requests still queued are dropped
     * rather than run for nobody. The first reason given is kept.
     */
    void end(String reason) {
        if (endReason == null) {
            endReason = reason;
        }
        queue.add(END);
    }

    /** The event loop saw the channel become writable again; a chunked reply may go on. */
    void writable() {
        Thread gpuThread = thread;
        if (gpuThread != null) {
            LockSupport.unpark(gpuThread);
        }
    }

    // ---- GPU thread

    @Override
    public void run() {
        try {
            while (!stopping) {
                Object item = next();
                if (item == END) {
                    break;
                }
                Frame frame = (Frame) item;
                if (endReason != null) {
                    frame.release();
                    break;
                }
                long start = System.nanoTime();
                try {
                    handle(frame);
                } finally {
                    dequeued(frame);
                    busyNanos += System.nanoTime() - start;
                }
            }
        } catch (InterruptedException e) {
            endReason = endReason == null ? "the worker was interrupted" : endReason;
        } catch (RuntimeException | Error fatal) {
            endReason = "the worker failed: " + fatal;
            throw fatal;
        } finally {
            finishSession();
        }
    }

    private Object next() throws InterruptedException {
        Object item = queue.poll();
        if (item != null) {
            return item;
        }
        flushReplies();
        if (config.spinNanos() > 0) {
            long deadline = System.nanoTime() + config.spinNanos();
            do {
                Thread.onSpinWait();
                item = queue.poll();
                if (item != null) {
                    return item;
                }
            } while (System.nanoTime() < deadline);
        }
        return queue.take();
    }

    private void handle(Frame frame) {
        try {
            if (chunkOpen && (frame.opcode() != chunkOpcode || frame.requestId() != chunkRequestId)) {
                throw Frames.violation(frame + " arrived inside the chunked copy of request " + chunkRequestId);
            }
            if (!chunkOpen) {
                calls++;
            }
            RequestDecoder.dispatch(frame, this);
        } catch (VgpuException violation) {
            if (violation.code() != ErrorCode.VGPU_PROTOCOL_ERROR) {
                throw violation;
            }
            reply().error(0, violation);
            stop("protocol error: " + violation.detail(), false);
        }
    }

    private void dequeued(Frame frame) {
        long queued = queuedBytes.addAndGet(-frame.body().readableBytes());
        frame.release();
        if (queued < RESUME_READING_BYTES && readingPaused.compareAndSet(true, false)) {
            channel.eventLoop().execute(() -> channel.config().setAutoRead(true));
        }
    }

    private void stop(String reason, boolean cleanly) {
        if (endReason == null) {
            endReason = reason;
        }
        clean = cleanly;
        stopping = true;
    }

    /** Frees the vGPU (whatever the client left allocated), drops unexecuted requests, closes the connection. */
    private void finishSession() {
        String closeFailure = null;
        if (gpu != null) {
            try {
                closeStaging();
                gpu.close();
            } catch (RuntimeException e) {
                closeFailure = VgpuFailure.describe(e);
            }
        }
        ByteBuf last = pendingReplies;
        pendingReplies = null;
        if (last != null && channel.isActive()) {
            channel.writeAndFlush(last).addListener(ChannelFutureListener.CLOSE);
        } else {
            if (last != null) {
                last.release();
            }
            channel.close();
        }
        finished = true;
        releaseQueued();
        String reason = endReason == null ? "the session ended" : endReason;
        outcome.complete(new Outcome(calls, busyNanos, clean && closeFailure == null,
                closeFailure == null ? reason : reason + "; freeing the vGPU failed: " + closeFailure));
    }

    /** Drops requests that will never run; safe from both threads since each frame is polled once. */
    private void releaseQueued() {
        for (Object item = queue.poll(); item != null; item = queue.poll()) {
            if (item instanceof Frame frame) {
                frame.release();
            }
        }
    }

    // ---- replies

    private ReplyEncoder reply() {
        if (pendingReplies == null) {
            pendingReplies = channel.alloc().directBuffer(256);
        } else if (pendingReplies.readableBytes() >= REPLY_FLUSH_BYTES) {
            flushReplies();
            pendingReplies = channel.alloc().directBuffer(256);
        }
        return replies.wrap(pendingReplies);
    }

    private void flushReplies() {
        ByteBuf gathered = pendingReplies;
        if (gathered != null) {
            pendingReplies = null;
            channel.writeAndFlush(gathered, channel.voidPromise());
        }
    }

    // ---- the request semantics

    private interface Call {
        void run();
    }

    /** Runs a request without a result: answers OK, or keeps its failure when it is asynchronous. */
    private void execute(Frame frame, Call call) {
        if (answeredWithKeptFailure(frame)) {
            return;
        }
        try {
            call.run();
            if (!frame.isAsync()) {
                reply().ok(frame.requestId());
            }
        } catch (RuntimeException e) {
            failed(frame, e);
        }
    }

    /** A synchronizing request reports the kept asynchronous failure instead of running. */
    private boolean answeredWithKeptFailure(Frame frame) {
        if (frame.isAsync() || !frame.opcode().synchronizing() || deferred == null) {
            return false;
        }
        VgpuException kept = deferred;
        deferred = null;
        reply().error(frame.requestId(), kept);
        return true;
    }

    private void failed(Frame frame, RuntimeException e) {
        VgpuException failure = asVgpuException(e);
        if (!frame.isAsync()) {
            reply().error(frame.requestId(), failure);
        } else if (deferred == null) {
            deferred = new VgpuException(failure.code(), "asynchronous " + frame.opcode() + " (request "
                    + frame.requestId() + ") failed: " + failure.detail(), failure);
        }
    }

    private static VgpuException asVgpuException(RuntimeException e) {
        return e instanceof VgpuException v ? v
                : new VgpuException(ErrorCode.CUDA_ERROR_UNKNOWN, "the worker failed: " + VgpuFailure.describe(e), e);
    }

    private VirtualGpu gpu() {
        if (gpu == null) {
            throw Frames.violation("a request arrived before the session was opened");
        }
        return gpu;
    }

    private static <T> T lookup(Map<Integer, T> handles, int id, String kind) {
        T handle = handles.get(id);
        if (handle == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_HANDLE, kind + " " + id + " is not live in this session");
        }
        return handle;
    }

    private static <T> void register(Map<Integer, T> handles, int id, String kind, T handle) {
        if (handles.putIfAbsent(id, handle) != null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, kind + " id " + id + " is already in use");
        }
    }

    private StreamHandle stream(int id) {
        return id == StreamHandle.DEFAULT.id() ? StreamHandle.DEFAULT : lookup(streams, id, "stream");
    }

    private StagingRing staging() {
        if (staging == null) {
            staging = new StagingRing(gpu());
        }
        return staging;
    }

    /** Frees the staging slots before the vGPU that owns them closes. */
    private void closeStaging() {
        StagingRing ring = staging;
        staging = null;
        if (ring != null) {
            ring.close();
        }
    }

    // ---- RequestVisitor

    @Override
    public void hello(Frame frame, Hello hello) {
        if (gpu != null) {
            throw Frames.violation("HELLO arrived in a session that is already open");
        }
        try {
            gpu = backend.open(config.device(), hello.window());
            // Pinning host memory takes milliseconds: paid here, not by the session's first bulk copy,
            // which may be a migration reading the vGPU while its app is stopped.
            staging();
            reply().welcome(frame.requestId(), new Welcome(Frames.PROTOCOL_VERSION, config.workerId(),
                    (int) config.idleTimeout().toMillis(), gpu.deviceProperties()));
        } catch (RuntimeException e) {
            VgpuException failure = asVgpuException(e);
            reply().error(frame.requestId(), failure);
            stop("the vGPU could not be opened: " + failure.getMessage(), false);
        }
    }

    @Override
    public void ping(Frame frame) {
        // answered by the event loop; one that got here was queued behind nothing that needs it
    }

    @Override
    public void goodbye(Frame frame) {
        VirtualGpu closing = gpu;
        gpu = null;
        try {
            closeStaging();
            if (closing != null) {
                closing.close();
            }
            reply().ok(frame.requestId());
            stop("the client said goodbye", true);
        } catch (RuntimeException e) {
            reply().error(frame.requestId(), asVgpuException(e));
            stop("freeing the vGPU at goodbye failed: " + VgpuFailure.describe(e), false);
        }
    }

    @Override
    public void memGetInfo(Frame frame) {
        try {
            reply().ok(frame.requestId(), gpu().memGetInfo());
        } catch (RuntimeException e) {
            failed(frame, e);
        }
    }

    @Override
    public void moduleLoad(Frame frame, int moduleId, ByteBuf image) {
        byte[] bytes = ByteBufUtil.getBytes(image);
        execute(frame, () -> {
            ModuleHandle module = gpu().moduleLoadData(bytes);
            try {
                register(modules, moduleId, "module", module);
            } catch (VgpuException e) {
                gpu.moduleUnload(module);
                throw e;
            }
        });
    }

    @Override
    public void moduleUnload(Frame frame, int moduleId) {
        execute(frame, () -> {
            gpu().moduleUnload(lookup(modules, moduleId, "module"));
            modules.remove(moduleId);
        });
    }

    @Override
    public void moduleGetFunction(Frame frame, int moduleId, int functionId, String kernelName) {
        try {
            FunctionHandle function = gpu().moduleGetFunction(lookup(modules, moduleId, "module"), kernelName);
            register(functions, functionId, "function", function);
            reply().ok(frame.requestId(), gpu.functionSignature(function));
        } catch (RuntimeException e) {
            failed(frame, e);
        }
    }

    @Override
    public void memAllocAt(Frame frame, long address, long bytes) {
        execute(frame, () -> gpu().memAllocAt(address, bytes));
    }

    @Override
    public void memFree(Frame frame, long address) {
        execute(frame, () -> gpu().memFree(address));
    }

    @Override
    public void memcpyHtoD(Frame frame, int streamId, long dst, ByteBuf data) {
        copyChunkToDevice(frame, streamId, stream -> {
            if (!data.isReadable()) {
                // a copy of 0 bytes still checks its pointer, as on a local vGPU
                gpu().memcpyHtoD(dst, MemorySegment.NULL, 0);
            }
            stageToDevice(dst, data, stream);
        });
    }

    @Override
    public void memcpyHtoDScatter(Frame frame, int streamId, List<DeviceRegion> pieces, ByteBuf data) {
        copyChunkToDevice(frame, streamId, stream -> stageScatterToDevice(pieces, data, stream));
    }

    /**
     * One chunk of a copy to the device ({@link Opcode#MEMCPY_HTOD} or {@link Opcode#MEMCPY_HTOD_SCATTER}):
     * {@code stage} queues it on the stream the request runs on; the request is answered, or its
     * failure kept, after its last chunk, and a failed chunk makes the rest of the request skip.
     */
    private void copyChunkToDevice(Frame frame, int streamId, Consumer<StreamHandle> stage) {
        if (!chunkOpen) {
            chunkOpcode = frame.opcode();
            chunkRequestId = frame.requestId();
            chunkAsync = frame.isAsync();
            chunkFailure = null;
            if (!chunkAsync && deferred != null) {
                chunkFailure = deferred;
                deferred = null;
            }
        } else if (frame.isAsync() != chunkAsync) {
            throw Frames.violation("chunks of request " + chunkRequestId + " disagree on being asynchronous");
        }
        chunkOpen = frame.hasMore();
        if (chunkFailure == null) {
            try {
                StreamHandle stream = stream(streamId);
                stage.accept(chunkAsync ? stream : StreamHandle.DEFAULT);
                if (!chunkOpen && !chunkAsync) {
                    staging().awaitDevice();
                }
            } catch (RuntimeException e) {
                chunkFailure = asVgpuException(e);
            }
        }
        if (!chunkOpen) {
            if (chunkFailure != null) {
                failed(frame, chunkFailure);
            } else if (!chunkAsync) {
                reply().ok(frame.requestId());
            }
            chunkFailure = null;
        }
    }

    /**
     * Copies a chunk to the device through the staging slots: its pieces (a large chunk arrives in
     * several buffers, see {@link org.vgpu.runtime.remote.protocol.FrameDecoder}) are gathered into
     * a slot, whose copy then runs on {@code stream} while the next chunk is received and staged.
     * The frame may be released at once. A synchronous copy is an asynchronous one on the default
     * stream that its last chunk waits for, as CUDA's synchronous copy orders itself.
     */
    private void stageToDevice(long dst, ByteBuf data, StreamHandle stream) {
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

    /** Copies {@code bytes} of {@code data} from {@code index} into the next free slot and queues {@code deviceCopy} of them on {@code stream}. */
    private void stageSlot(ByteBuf data, int index, int bytes, StreamHandle stream, Consumer<MemorySegment> deviceCopy) {
        StagingRing.Slot slot = staging().acquire();
        MemorySegment host = slot.memory(bytes);
        data.getBytes(index, host.asByteBuffer());
        deviceCopy.accept(host);
        slot.deviceCopyQueued(stream);
    }

    @Override
    public void memcpyDtoH(Frame frame, int streamId, long src, long bytes, int chunkBytes) {
        if (answeredWithKeptFailure(frame)) {
            return;
        }
        try {
            StreamHandle stream = stream(streamId);
            if (bytes < 0) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "byte count must be >= 0, got " + bytes);
            }
            flushReplies();
            sendFromDevice(frame, List.of(new DeviceRegion(src, bytes)), Math.min(chunkBytes, StagingRing.SLOT_BYTES), stream);
        } catch (RuntimeException e) {
            failedToSend(frame, e);
        }
    }

    @Override
    public void memcpyDtoHGather(Frame frame, int streamId, List<DeviceRegion> regions, int chunkBytes) {
        if (answeredWithKeptFailure(frame)) {
            return;
        }
        try {
            StreamHandle stream = stream(streamId);
            flushReplies();
            sendFromDevice(frame, regions, Math.min(chunkBytes, StagingRing.SLOT_BYTES), stream);
        } catch (RuntimeException e) {
            failedToSend(frame, e);
        }
    }

    /** A device-to-host request that failed, maybe after some of its DATA: it is answered even when asynchronous. */
    private void failedToSend(Frame frame, RuntimeException e) {
        VgpuException failure = asVgpuException(e);
        if (frame.isAsync()) {
            // the client still waits for this request's end; the failure is also kept for the next sync
            reply().error(frame.requestId(), failure);
        }
        failed(frame, failure);
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
    private void sendFromDevice(Frame frame, List<DeviceRegion> regions, int chunkBytes, StreamHandle asyncStream) {
        int requestId = frame.requestId();
        StreamHandle stream = frame.isAsync() ? asyncStream : StreamHandle.DEFAULT;
        // regions of 0 bytes go with a chunk too: their pointers are checked, as on a local vGPU
        List<List<DeviceRegion>> chunks = DeviceRegion.runs(regions, chunkBytes, Integer.MAX_VALUE);
        StagingRing ring = staging();
        StagingRing.Slot copied = null;
        long copiedOffset = 0;
        int copiedLength = 0;
        long offset = 0;
        for (List<DeviceRegion> pieces : chunks.isEmpty() ? List.of(List.<DeviceRegion>of()) : chunks) {
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
        }
        sendSlot(requestId, copied, copiedOffset, copiedLength, false, frame.isAsync() && deferred != null);
    }

    /**
     * Writes one DATA chunk whose bytes are in {@code slot} once the device is done with it, with its
     * header in the slot's room in front of them: one buffer, one write.
     */
    private void sendSlot(int requestId, StagingRing.Slot slot, long offset, int length, boolean more, boolean failureKept) {
        slot.awaitDevice();
        awaitWritable();
        ByteBuf chunk = Unpooled.wrappedBuffer(slot.withHeader(ReplyEncoder.dataHeaderBytes(), length).asByteBuffer());
        chunk.writerIndex(0);
        replies.wrap(chunk).dataHeader(requestId, more, failureKept, offset, length);
        chunk.writerIndex(chunk.capacity());
        slot.sending();
        channel.writeAndFlush(chunk).addListener(written -> slot.written());
    }

    /** Lets a chunked reply wait while the connection's outbound buffer is full, instead of piling up memory. */
    private void awaitWritable() {
        while (!channel.isWritable() && channel.isActive()) {
            LockSupport.parkNanos(this, 1_000_000);
        }
    }

    @Override
    public void memcpyDtoD(Frame frame, int streamId, long dst, long src, long bytes) {
        execute(frame, () -> {
            if (frame.isAsync()) {
                gpu().memcpyDtoDAsync(dst, src, bytes, stream(streamId));
            } else {
                gpu().memcpyDtoD(dst, src, bytes);
            }
        });
    }

    @Override
    public void memset(Frame frame, int streamId, long dst, int value, int elementSize, long count) {
        execute(frame, () -> {
            VirtualGpu device = gpu();
            if (frame.isAsync()) {
                StreamHandle stream = stream(streamId);
                if (elementSize == 1) {
                    device.memsetD8Async(dst, (byte) value, count, stream);
                } else {
                    device.memsetD32Async(dst, value, count, stream);
                }
            } else if (elementSize == 1) {
                device.memsetD8(dst, (byte) value, count);
            } else {
                device.memsetD32(dst, value, count);
            }
        });
    }

    @Override
    public void launchKernel(Frame frame, int functionId, Dim3 grid, Dim3 block, int sharedMemBytes, int streamId,
                             KernelArgs args) {
        execute(frame, () -> gpu().launchKernel(lookup(functions, functionId, "function"), grid, block, sharedMemBytes,
                stream(streamId), args));
    }

    @Override
    public void streamCreate(Frame frame, int streamId) {
        execute(frame, () -> {
            if (streamId == StreamHandle.DEFAULT.id()) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, "stream id 0 is the default stream");
            }
            StreamHandle stream = gpu().streamCreate();
            try {
                register(streams, streamId, "stream", stream);
            } catch (VgpuException e) {
                gpu.streamDestroy(stream);
                throw e;
            }
        });
    }

    @Override
    public void streamSynchronize(Frame frame, int streamId) {
        execute(frame, () -> gpu().streamSynchronize(stream(streamId)));
    }

    @Override
    public void streamDestroy(Frame frame, int streamId) {
        execute(frame, () -> {
            gpu().streamDestroy(lookup(streams, streamId, "stream"));
            streams.remove(streamId);
        });
    }

    @Override
    public void eventCreate(Frame frame, int eventId) {
        execute(frame, () -> {
            EventHandle event = gpu().eventCreate();
            try {
                register(events, eventId, "event", event);
            } catch (VgpuException e) {
                gpu.eventDestroy(event);
                throw e;
            }
        });
    }

    @Override
    public void eventRecord(Frame frame, int eventId, int streamId) {
        execute(frame, () -> gpu().eventRecord(lookup(events, eventId, "event"), stream(streamId)));
    }

    @Override
    public void eventSynchronize(Frame frame, int eventId) {
        execute(frame, () -> gpu().eventSynchronize(lookup(events, eventId, "event")));
    }

    @Override
    public void eventElapsedTime(Frame frame, int startEventId, int endEventId) {
        try {
            float millis = gpu().eventElapsedTime(lookup(events, startEventId, "event"), lookup(events, endEventId, "event"));
            reply().ok(frame.requestId(), millis);
        } catch (RuntimeException e) {
            failed(frame, e);
        }
    }

    @Override
    public void eventDestroy(Frame frame, int eventId) {
        execute(frame, () -> {
            gpu().eventDestroy(lookup(events, eventId, "event"));
            events.remove(eventId);
        });
    }

    @Override
    public void ctxSynchronize(Frame frame) {
        execute(frame, () -> gpu().ctxSynchronize());
    }
}
