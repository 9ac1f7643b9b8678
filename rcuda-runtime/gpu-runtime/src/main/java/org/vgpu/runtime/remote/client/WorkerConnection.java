package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.protocol.ReplyVisitor;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.security.TlsFailures;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * The client end of one session with a GPU worker: request ids, the batch of requests not yet
 * written, the calls waiting for replies, keepalive, and what happens when the worker is lost.
 *
 * <p>App threads encode requests straight into the batch under one lock, so the order of requests
 * on the wire is the order the calls were made in. Asynchronous requests stay in the batch until a
 * synchronizing call, a size bound or an asynchronous device-to-host copy of a chunk or more, whose
 * data takes longer to come than the batching saves; then the whole batch is handed to the event loop at once,
 * the only thread that touches the channel. Replies are read on the event loop, which completes
 * the waiting calls and copies device-to-host data straight into the caller's memory.
 *
 * <p>When the connection ends without a goodbye, or the worker stays silent past its idle timeout
 * (it answers keepalives even while a long kernel runs), every waiting and every later call fails
 * with VGPU_WORKER_LOST naming the worker; other connections are not affected.
 */
final class WorkerConnection implements AutoCloseable {
    /** Below this a host-to-device chunk is copied into the batch; above, the caller's native memory is sent as it is. */
    private static final int ZERO_COPY_MIN_BYTES = 64 << 10;
    private static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(4 << 20, 8 << 20);
    /** Id of keepalive pings, which no call waits for. */
    private static final int PING_ID = 0;

    /** Writes one request frame; called under the batch lock with a fresh request id. */
    @FunctionalInterface
    interface Request {
        void encode(RequestEncoder encoder, int requestId);
    }

    private final WorkerEndpoint endpoint;
    private final RemoteConfig config;
    /** Set once by {@link #open} before the connection is handed out; the event loop side uses its context instead. */
    private Channel channel;
    private final ConcurrentHashMap<Integer, PendingCall<?>> waiting = new ConcurrentHashMap<>();
    private final CompletableFuture<Welcome> handshake = new CompletableFuture<>();
    /** Device-to-host copies into confined memory, whose chunks wait for the owner thread. */
    private final ConcurrentLinkedQueue<PendingCopyToHost> heldCopies = new ConcurrentLinkedQueue<>();
    private final ChunkLanding landing;
    private volatile VgpuException lost;
    private volatile long idleTimeoutNanos = Long.MAX_VALUE;
    private volatile long lastReadNanos = System.nanoTime();
    private volatile Thread writabilityWaiter;
    private volatile boolean closing;

    // guarded by batchLock
    private final ReentrantLock batchLock = new ReentrantLock();
    private final RequestEncoder encoder = new RequestEncoder();
    private final List<ByteBuf> parts = new ArrayList<>();
    private ByteBuf current;
    private int batchedFrames;
    private int nextRequestId = 1;
    /**
     * Streams whose last request is an asynchronous device-to-host copy, with that copy: until any
     * other request is sent (one that might add work to the stream), the copy's last chunk of data
     * tells that the stream is done, so a synchronize of it need not queue behind later requests.
     */
    private final Map<Integer, PendingCopyToHost> streamsEndingInCopyToHost = new HashMap<>();

    private WorkerConnection(WorkerEndpoint endpoint, RemoteConfig config) {
        this.endpoint = endpoint;
        this.config = config;
        this.landing = ChunkLanding.withCopierThread("vgpu-copier-" + endpoint.workerId());
    }

    /**
     * Connects, says HELLO and waits for WELCOME.
     *
     * @param ssl TLS, or null for plain TCP; with TLS the worker's certificate must name {@code endpoint.host()}
     * @throws VgpuException VGPU_WORKER_LOST when the worker cannot be reached or does not answer in
     *         time, or the error the worker refused the session with (VGPU_AUTH_FAILED, ...)
     */
    static WorkerConnection open(EventLoopGroup group, WorkerEndpoint endpoint, VaWindow window, RemoteConfig config,
                                 SslContext ssl) {
        WorkerConnection connection = new WorkerConnection(endpoint, config);
        Bootstrap bootstrap = new Bootstrap();
        NettyTransport.socketBuffers(bootstrap::option);
        ChannelFuture connected = bootstrap
                .group(group)
                .channel(NettyTransport.socketChannel())
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, config.connectTimeout().toMillis()))
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                .option(ChannelOption.RECVBUF_ALLOCATOR, new AdaptiveRecvByteBufAllocator(512, 16 << 10, 1 << 20))
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                        if (ssl != null) {
                            channel.pipeline().addLast(verifyingHostName(ssl.newHandler(channel.alloc(), endpoint.host(),
                                    endpoint.port())));
                        }
                        channel.pipeline().addLast(new FrameDecoder(Opcode.Direction.REPLY), connection.new Handler());
                    }
                })
                .connect(endpoint.host(), endpoint.port());
        connection.channel = connected.channel();
        try {
            connected.awaitUninterruptibly();
            if (!connected.isSuccess()) {
                throw new VgpuException(ErrorCode.VGPU_WORKER_LOST, "cannot connect to " + endpoint.describe() + ": "
                        + VgpuFailure.describe(connected.cause()), connected.cause());
            }
            connection.hello(window);
            return connection;
        } catch (RuntimeException e) {
            connection.closing = true;
            connection.channel.close().awaitUninterruptibly(1000);
            throw e;
        }
    }

    /** The worker's certificate must name the host this client connects to, whatever context the caller built. */
    private static SslHandler verifyingHostName(SslHandler handler) {
        SSLParameters parameters = handler.engine().getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        handler.engine().setSSLParameters(parameters);
        return handler;
    }

    private void hello(VaWindow window) {
        ByteBuf hello = channel.alloc().buffer(256);
        encoder.wrap(hello).hello(nextId(), new Hello(Frames.PROTOCOL_VERSION, endpoint.token(), window));
        channel.writeAndFlush(hello, channel.voidPromise());
        Welcome welcome;
        try {
            welcome = handshake.get(config.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof VgpuException refused
                    ? new VgpuException(refused.code(), refused.detail(), refused)
                    : new VgpuException(ErrorCode.VGPU_WORKER_LOST, endpoint.describe() + " failed the handshake: "
                            + VgpuFailure.describe(e.getCause()), e);
        } catch (TimeoutException e) {
            throw new VgpuException(ErrorCode.VGPU_WORKER_LOST, endpoint.describe() + " did not answer HELLO within "
                    + config.connectTimeout().toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VgpuException(ErrorCode.VGPU_WORKER_LOST, "interrupted while opening a session with " + endpoint.describe());
        }
        if (welcome.protocolVersion() != Frames.PROTOCOL_VERSION) {
            throw Frames.violation(endpoint.describe() + " speaks protocol version " + welcome.protocolVersion()
                    + ", this client " + Frames.PROTOCOL_VERSION);
        }
        // Keepalive: ask for a pong whenever nothing was read or written for a third of the worker's
        // idle timeout; a worker silent for the whole timeout is lost.
        long idleMillis = welcome.idleTimeoutMillis();
        idleTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(idleMillis);
        long keepaliveMillis = Math.max(1, idleMillis / 3);
        channel.eventLoop().execute(() -> channel.pipeline().addBefore(channel.pipeline().context(Handler.class).name(),
                "keepalive", new IdleStateHandler(keepaliveMillis, keepaliveMillis, 0, TimeUnit.MILLISECONDS)));
    }

    Welcome welcome() {
        return handshake.getNow(null);
    }

    WorkerEndpoint endpoint() {
        return endpoint;
    }

    // ---- sending

    /** Queues an asynchronous request: no reply, its failure surfaces at the next synchronizing call. */
    void send(Request request) {
        batchLock.lock();
        try {
            checkAlive();
            append(request, nextId());
            if (batchFull()) {
                flushLocked();
            }
        } finally {
            batchLock.unlock();
        }
    }

    /** Sends a request with everything batched before it and waits for its reply. */
    <T> T call(Request request, Function<ByteBuf, T> resultReader) {
        return call(request, resultReader, Long.MAX_VALUE);
    }

    private <T> T call(Request request, Function<ByteBuf, T> resultReader, long timeoutNanos) {
        PendingCall<T> call = new PendingCall<>(resultReader);
        batchLock.lock();
        try {
            checkAlive();
            int id = nextId();
            register(id, call);
            try {
                append(request, id);
            } catch (RuntimeException e) {
                waiting.remove(id);
                throw e;
            }
            flushLocked();
        } finally {
            batchLock.unlock();
        }
        return await(call, timeoutNanos);
    }

    /**
     * Waits for {@code call}, then for every chunk handed to the copier before it ended (the app
     * must find its memory as the worker's order of replies says), then applies the held copies.
     */
    private <T> T await(PendingCall<T> call, long timeoutNanos) {
        try {
            return call.await(config.spinNanos(), timeoutNanos);
        } finally {
            landing.awaitLanded(call.landingMark(landing));
            applyHeldCopies();
        }
    }

    /**
     * A host-to-device copy in chunks, each flushed as soon as it is queued so the worker copies one
     * while the next travels. Native host memory is sent without a copy: a synchronous copy waits for
     * the last chunk's acknowledgement, and an asynchronous one may rely on the caller keeping the
     * memory valid until it synchronizes, as with CUDA.
     */
    void copyToDevice(long dst, MemorySegment src, long bytes, int streamId, boolean async) {
        int chunkBytes = config.chunkBytes();
        int[] lengths = new int[(int) Math.max(1, Math.ceilDiv(bytes, chunkBytes))];
        for (int chunk = 0; chunk < lengths.length; chunk++) {
            lengths[chunk] = (int) Math.min(chunkBytes, bytes - (long) chunk * chunkBytes);
        }
        copyChunksToDevice(src, lengths, async, (encoder, requestId, more, chunk, offset, length) ->
                encoder.memcpyHtoDChunkHeader(requestId, async, more, streamId, dst + offset, length));
    }

    /**
     * Packed host bytes written to many device regions as one request, chunked as {@link #copyToDevice}
     * is, each chunk naming the pieces of the regions its bytes go to. No regions send nothing.
     */
    void scatterToDevice(List<DeviceRegion> regions, MemorySegment src, int streamId, boolean async) {
        List<List<DeviceRegion>> chunks = DeviceRegion.runs(regions, config.chunkBytes(), RequestDecoder.MAX_SCATTER_PIECES);
        if (chunks.isEmpty()) {
            return;
        }
        int[] lengths = new int[chunks.size()];
        for (int chunk = 0; chunk < lengths.length; chunk++) {
            lengths[chunk] = (int) DeviceRegion.totalBytes(chunks.get(chunk));
        }
        copyChunksToDevice(src, lengths, async, (encoder, requestId, more, chunk, offset, length) ->
                encoder.memcpyHtoDScatterChunkHeader(requestId, async, more, streamId, chunks.get(chunk), length));
    }

    /** Writes the header of chunk {@code chunk}, whose {@code length} bytes start at {@code offset} of the source. */
    @FunctionalInterface
    private interface ChunkHeader {
        void write(RequestEncoder encoder, int requestId, boolean more, int chunk, long offset, int length);
    }

    /** Sends one request to the device as chunks of {@code lengths} bytes of {@code src}, back to back. */
    private void copyChunksToDevice(MemorySegment src, int[] lengths, boolean async, ChunkHeader header) {
        PendingCall<Void> call = async ? null : new PendingCall<>(ReplyDecoder::empty);
        batchLock.lock();
        try {
            checkAlive();
            int id = nextId();
            if (call != null) {
                register(id, call);
            }
            streamsEndingInCopyToHost.clear();
            long offset = 0;
            try {
                for (int chunk = 0; chunk < lengths.length; chunk++) {
                    int length = lengths[chunk];
                    boolean more = chunk + 1 < lengths.length;
                    ByteBuf batch = current();
                    header.write(encoder.wrap(batch), id, more, chunk, offset, length);
                    if (src.isNative() && HostMemory.isShared(src) && length >= ZERO_COPY_MIN_BYTES) {
                        parts.add(batch);
                        current = null;
                        parts.add(Unpooled.wrappedBuffer(src.asSlice(offset, length).asByteBuffer()));
                    } else {
                        encoder.chunkBytes(src, offset, length);
                    }
                    batchedFrames++;
                    offset += length;
                    if (more || !async || batchFull()) {
                        flushLocked();
                    }
                }
            } catch (RuntimeException e) {
                waiting.remove(id);
                throw e;
            }
        } finally {
            batchLock.unlock();
        }
        if (call != null) {
            await(call, Long.MAX_VALUE);
        }
    }

    /** A device-to-host copy; its chunks land in {@code dst} as they arrive. */
    void copyToHost(MemorySegment dst, long src, long bytes, int streamId, boolean async) {
        copyToHost(dst, bytes, streamId, async,
                (encoder, requestId) -> encoder.memcpyDtoH(requestId, async, streamId, src, bytes, config.chunkBytes()));
    }

    /** Device-to-host copies of many regions as one request; the regions' bytes land in {@code dst} back to back. */
    void gatherToHost(MemorySegment dst, List<DeviceRegion> regions, int streamId, boolean async) {
        copyToHost(dst, DeviceRegion.totalBytes(regions), streamId, async,
                (encoder, requestId) -> encoder.memcpyDtoHGather(requestId, async, streamId, regions, config.chunkBytes()));
    }

    /** Sends {@code request}, whose reply is {@code bytes} of DATA for {@code dst}. */
    private void copyToHost(MemorySegment dst, long bytes, int streamId, boolean async, Request request) {
        PendingCopyToHost copy = new PendingCopyToHost(dst, bytes);
        if (copy.heldForOwner()) {
            heldCopies.add(copy);
        }
        batchLock.lock();
        try {
            checkAlive();
            int id = nextId();
            register(id, copy);
            try {
                encode(request, id);
            } catch (RuntimeException e) {
                waiting.remove(id);
                heldCopies.remove(copy);
                throw e;
            }
            if (async) {
                streamsEndingInCopyToHost.put(streamId, copy);
            } else {
                streamsEndingInCopyToHost.clear();
            }
            // A copy of a chunk or more goes out now, so the worker starts on it while the app issues more
            // (mem-sync issues three reads of up to 2048 regions each before it first waits).
            if (!async || batchFull() || bytes >= config.chunkBytes()) {
                flushLocked();
            }
        } catch (RuntimeException e) {
            heldCopies.remove(copy);
            throw e;
        } finally {
            batchLock.unlock();
        }
        if (!async) {
            await(copy, Long.MAX_VALUE);
            copy.throwIfDestinationFreed();
        }
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
        batchLock.lock();
        try {
            copy = streamsEndingInCopyToHost.get(streamId);
            if (copy == null) {
                return false;
            }
            checkAlive();
            flushLocked();
        } finally {
            batchLock.unlock();
        }
        try {
            await(copy, Long.MAX_VALUE);
            copy.throwIfDestinationFreed();
        } catch (VgpuException failed) {
            return false;
        }
        return !copy.failureKept();
    }

    /**
     * Applies the device-to-host copies into confined memory of this thread that have completed:
     * every synchronizing call does, after its reply, which the worker sends only after the data
     * of every earlier copy.
     */
    private void applyHeldCopies() {
        if (heldCopies.isEmpty()) {
            return;
        }
        Thread self = Thread.currentThread();
        for (PendingCopyToHost copy : heldCopies) {
            if (copy.applicableBy(self) && heldCopies.remove(copy)) {
                if (copy.failed()) {
                    copy.releaseHeldChunks();
                } else {
                    copy.applyHeldChunks();
                }
            }
        }
    }

    /**
     * Ends the session: the worker frees the vGPU and answers, then the connection closes. A worker
     * that is already lost is not waited for, since its vGPU went with it.
     *
     * @throws VgpuException what the worker reported while freeing the vGPU
     */
    void goodbye() {
        try {
            if (lost == null) {
                call(RequestEncoder::goodbye, ReplyDecoder::empty, config.goodbyeTimeout().toNanos());
            }
        } catch (VgpuException e) {
            if (e.code() != ErrorCode.VGPU_WORKER_LOST) {
                throw e;
            }
        } finally {
            close();
        }
    }

    /** Closes the connection without a goodbye; the worker notices and frees the vGPU itself. */
    @Override
    public void close() {
        closing = true;
        batchLock.lock();
        try {
            releaseBatch();
        } finally {
            batchLock.unlock();
        }
        channel.close().awaitUninterruptibly(5000);
        landing.close();
        for (PendingCopyToHost copy = heldCopies.poll(); copy != null; copy = heldCopies.poll()) {
            copy.releaseHeldChunks();
        }
    }

    private int nextId() {
        int id = nextRequestId;
        nextRequestId = id == Integer.MAX_VALUE ? 1 : id + 1;
        return id;
    }

    private void register(int id, PendingCall<?> call) {
        waiting.put(id, call);
        if (lost != null && waiting.remove(id) != null) {
            // lost between checkAlive and put: the loss handler may have missed this call
            checkAlive();
        }
    }

    private ByteBuf current() {
        if (current == null) {
            current = channel.alloc().directBuffer(4096);
        }
        return current;
    }

    /** Adds a request to the batch; it may add work to any stream, so no stream is known to end in a copy any more. */
    private void append(Request request, int id) {
        encode(request, id);
        streamsEndingInCopyToHost.clear();
    }

    private void encode(Request request, int id) {
        ByteBuf batch = current();
        int mark = batch.writerIndex();
        try {
            request.encode(encoder.wrap(batch), id);
        } catch (RuntimeException e) {
            batch.writerIndex(mark);
            throw e;
        }
        batchedFrames++;
    }

    private boolean batchFull() {
        return batchedFrames >= config.batchFrames() || (current != null && current.readableBytes() >= config.batchBytes());
    }

    /**
     * Hands the batch to the event loop: lazy writes and one flush, so the loop wakes once. Then
     * waits while the connection's outbound buffer is over its high-water mark, which bounds the
     * memory a fast writer can pile up (writes queued from here count towards it).
     */
    private void flushLocked() {
        if (current != null && current.isReadable()) {
            parts.add(current);
            current = null;
        }
        batchedFrames = 0;
        if (parts.isEmpty()) {
            return;
        }
        for (ByteBuf part : parts) {
            channel.write(part, channel.voidPromise());
        }
        parts.clear();
        channel.flush();
        awaitWritable();
    }

    private void awaitWritable() {
        if (channel.isWritable()) {
            return;
        }
        writabilityWaiter = Thread.currentThread();
        try {
            while (!channel.isWritable()) {
                checkAlive();
                LockSupport.parkNanos(this, 1_000_000);
            }
        } finally {
            writabilityWaiter = null;
        }
    }

    private void releaseBatch() {
        for (ByteBuf part : parts) {
            part.release();
        }
        parts.clear();
        if (current != null) {
            current.release();
            current = null;
        }
    }

    private void checkAlive() {
        VgpuException failure = lost;
        if (failure != null) {
            throw new VgpuException(failure.code(), failure.detail(), failure);
        }
    }

    /** The first loss wins; every waiting call fails with it. Event loop. */
    private void lose(VgpuException failure) {
        if (lost == null) {
            lost = failure;
        }
        handshake.completeExceptionally(lost);
        for (Integer id : waiting.keySet()) {
            PendingCall<?> call = waiting.remove(id);
            if (call != null) {
                call.landAfter(landing.handedOff());
                call.fail(lost);
            }
        }
        Thread writer = writabilityWaiter;
        if (writer != null) {
            LockSupport.unpark(writer);
        }
    }

    /** The event loop's end: reads replies and completes the calls waiting for them. */
    private final class Handler extends ChannelInboundHandlerAdapter implements ReplyVisitor {

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            lastReadNanos = System.nanoTime();
            Frame frame = (Frame) msg;
            try {
                ReplyDecoder.dispatch(frame, this);
            } finally {
                frame.release();
            }
        }

        @Override
        public void welcome(int requestId, Welcome welcome) {
            if (!handshake.complete(welcome)) {
                throw Frames.violation("WELCOME arrived in an open session");
            }
        }

        @Override
        public void pong(int requestId) {
            // reading it was the point
        }

        @Override
        public void ok(int requestId, ByteBuf result) {
            PendingCall<?> call = waiting.remove(requestId);
            if (call == null) {
                throw Frames.violation("OK for request " + requestId + ", which no call waits for");
            }
            call.landAfter(landing.handedOff());
            call.succeed(result);
        }

        private ChannelHandlerContext ctx;

        @Override
        public void handlerAdded(ChannelHandlerContext context) {
            ctx = context;
        }

        @Override
        public void error(int requestId, VgpuException failure) {
            if (requestId == 0 || !handshake.isDone()) {
                String what = handshake.isDone() ? " ended the session: " : " refused the session: ";
                lose(new VgpuException(failure.code(), endpoint.describe() + what + failure.detail(), failure));
                ctx.close();
                return;
            }
            PendingCall<?> call = waiting.remove(requestId);
            if (call == null) {
                throw Frames.violation("ERROR for request " + requestId + ", which no call waits for: " + failure.getMessage());
            }
            call.landAfter(landing.handedOff());
            call.fail(failure);
        }

        @Override
        public void data(int requestId, boolean more, boolean failureKept, long offset, ByteBuf bytes) {
            if (!(waiting.get(requestId) instanceof PendingCopyToHost copy)) {
                throw Frames.violation("DATA for request " + requestId + ", which is no device-to-host copy in flight");
            }
            if (copy.accept(offset, bytes, more, failureKept, landing)) {
                waiting.remove(requestId);
            }
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            lose(new VgpuException(ErrorCode.VGPU_WORKER_LOST, closing
                    ? "the session with " + endpoint.describe() + " is closed"
                    : endpoint.describe() + " closed the connection (the worker ended or the network failed)"));
            ctx.fireChannelInactive();
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Throwable failure = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
            if (failure instanceof VgpuException violation && violation.code() == ErrorCode.VGPU_PROTOCOL_ERROR) {
                lose(new VgpuException(ErrorCode.VGPU_PROTOCOL_ERROR, endpoint.describe() + " broke the protocol: "
                        + violation.detail(), violation));
            } else if (failure instanceof SSLException tls) {
                lose(new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "TLS with " + endpoint.describe() + " failed: "
                        + TlsFailures.reason(tls), tls));
            } else if (!(failure instanceof ClosedChannelException)) {
                lose(new VgpuException(ErrorCode.VGPU_WORKER_LOST, "the connection to " + endpoint.describe() + " failed: "
                        + VgpuFailure.describe(failure), failure));
            }
            ctx.close();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
            if (!(event instanceof IdleStateEvent)) {
                ctx.fireUserEventTriggered(event);
                return;
            }
            long silentNanos = System.nanoTime() - lastReadNanos;
            if (silentNanos >= idleTimeoutNanos) {
                lose(new VgpuException(ErrorCode.VGPU_WORKER_LOST, "no frame from " + endpoint.describe() + " for "
                        + TimeUnit.NANOSECONDS.toMillis(silentNanos) + " ms: keepalive expired"));
                ctx.close();
            } else {
                ByteBuf ping = ctx.alloc().buffer(Frames.HEADER_BYTES);
                new RequestEncoder().wrap(ping).ping(PING_ID);
                ctx.writeAndFlush(ping, ctx.voidPromise());
            }
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            Thread writer = writabilityWaiter;
            if (writer != null && ctx.channel().isWritable()) {
                LockSupport.unpark(writer);
            }
            ctx.fireChannelWritabilityChanged();
        }
    }
}
