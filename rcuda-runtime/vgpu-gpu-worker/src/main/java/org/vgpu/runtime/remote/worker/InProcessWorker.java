package org.vgpu.runtime.remote.worker;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOutboundHandlerAdapter;
import io.netty.channel.ChannelPromise;
import io.netty.channel.embedded.EmbeddedChannel;

import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.worker.ServedSessions.LiveSession;

/**
 * A local worker without a socket: serves the vGPU sessions of the process it runs in (vgpu's {@code libcuda.so.1}
 * with its JVM inside a CUDA program), each request frame on the calling thread. The frames are the remote GPU
 * worker's, decoded by its {@link FrameDecoder} and run by the same {@link SessionExecutor} and {@link RequestHandler}
 * as {@link GpuWorker#startOnSocket}'s, on a channel of Netty's that is no connection ({@link EmbeddedChannel}): what
 * differs is only that no event loop reads a socket and no GPU thread takes a queue. Once a session is open its whole
 * frames skip that channel's pipeline, and its replies are encoded straight into the bytes the library reads: on this
 * path, taken by every served call, the pipeline's work cost twice the requests' own.
 *
 * <p>Sessions are as a local worker's ({@link GpuWorker.Sessions#ONE_PER_VGPU}): at most one per vGPU at a time. No
 * HELLO is authenticated: the only client is the process itself.
 */
public final class InProcessWorker implements AutoCloseable {
    private final WorkerConfig config;
    private final GpuBackend backend;
    private final Consumer<String> log;
    private final ServedSessions served = new ServedSessions(GpuWorker.Sessions.ONE_PER_VGPU);
    private final SessionOpening opening;
    private final StripeJoins stripeJoins = new StripeJoins();
    private final SharedHostRegions hostRegions;

    private InProcessWorker(WorkerConfig config, GpuBackend backend, Consumer<String> log) {
        this.config = config;
        this.backend = backend;
        this.log = log;
        this.opening = new SessionOpening(
                config, (token, window) -> {}, served, GpuWorker.Sessions.ONE_PER_VGPU, stripeJoins, List.of());
        this.hostRegions = SharedHostRegions.forThisHost(backend);
    }

    /**
     * A worker for this process's sessions on {@code backend}; {@code config}'s host and port are not used.
     *
     * @param log where the worker says what it does (a session refused, one that ended and why)
     */
    public static InProcessWorker start(WorkerConfig config, GpuBackend backend, Consumer<String> log) {
        return new InProcessWorker(
                Objects.requireNonNull(config, "config"),
                Objects.requireNonNull(backend, "backend"),
                Objects.requireNonNull(log, "log"));
    }

    /** The most bytes of page-locked host memory the sessions share with the library at once; 0 when none. */
    public long sharedHostBytes() {
        return hostRegions.boundBytes();
    }

    /** A new session, as a new connection to a local worker is one: its first request must be a HELLO. */
    public Session open() {
        return new Session();
    }

    /** Ends the sessions that run (each frees what it made), then the shared host memory. */
    @Override
    public void close() {
        served.endAll(message -> log.accept("worker " + config.workerId() + ": " + message));
        hostRegions.close();
    }

    /**
     * One session: request frames in, reply frames out, through one buffer. Its calls are serialised here, though the
     * library already sends one request of a vGPU at a time.
     */
    public final class Session {
        private final EmbeddedChannel channel;
        /** The reply frames not yet handed to the library. */
        private final ByteBuf outbox = Unpooled.buffer(4096);
        /** The pipeline's decoder, which also decodes the whole frames that bypass it ({@link #runWholeFrames}). */
        private final FrameDecoder decoder = new FrameDecoder(Opcode.Direction.REQUEST);

        /** Set by the HELLO, inside {@link #serve}; read by the library's direct-call lookups on its own threads. */
        private volatile SessionExecutor executor;
        /** Set once the session is ending: freeing the vGPU closes the channel, which must not end it again. */
        private boolean ending;
        /** The library's direct calls, once it asked for them and the vGPU offers them. */
        private LibraryDirectCalls directCallers;

        Session() {
            channel = new EmbeddedChannel(new Outbox(), decoder, new Requests());
        }

        /**
         * Runs the request frames in {@code buffer}'s first {@code requestBytes} bytes (none: only collects replies
         * still due), then writes the reply frames due from the start of {@code buffer}, as many as fit.
         *
         * @return how many bytes of replies were written; those that did not fit come at the next call
         */
        public synchronized int serve(ByteBuffer buffer, int requestBytes) {
            if (requestBytes > 0 && channel.isOpen()) {
                ByteBuf requests = Unpooled.wrappedBuffer(buffer.slice(0, requestBytes));
                try {
                    runWholeFrames(requests);
                    if (requests.isReadable() && channel.isOpen()) {
                        // copied: the decoder may keep part of a frame, and the buffer is the library's, reused
                        channel.writeInbound(Unpooled.copiedBuffer(requests));
                    }
                } catch (RuntimeException failure) {
                    log.accept("worker " + config.workerId() + ": a session failed: " + failure);
                    end("the worker failed: " + failure);
                } finally {
                    requests.release();
                }
            }
            int bytes = Math.min(outbox.readableBytes(), buffer.capacity());
            outbox.readBytes(buffer.slice(0, bytes));
            if (!outbox.isReadable()) {
                outbox.clear();
            } else if (outbox.readerIndex() > outbox.capacity() / 2) {
                outbox.discardReadBytes();
            }
            return bytes;
        }

        /**
         * Runs the frames of an open session straight from the library's bytes, without the pipeline, whose
         * machinery cost more than most requests themselves: the pipeline keeps the HELLO, and the bytes after part
         * of a frame it holds.
         */
        private void runWholeFrames(ByteBuf requests) {
            while (executor != null && !decoder.holdsPartialFrame() && channel.isOpen()) {
                Frame frame = decoder.next(requests);
                if (frame == null) {
                    return;
                }
                received(frame);
            }
        }

        /** A request of the open session (or a PING, at any time), whichever way it was decoded. */
        private void received(Frame frame) {
            if (frame.opcode() == Opcode.PING) {
                int requestId = frame.requestId();
                frame.release();
                new ReplyEncoder().wrap(outbox).pong(requestId);
            } else {
                executor.runInline(frame);
            }
        }

        // ---- direct driver calls (LibraryDirectCalls): called by the library through JNI, after the HELLO

        /**
         * Lets the library call the node's driver itself for this session's vGPU while it runs on a GPU of this
         * process, its migrations stopping those calls first.
         *
         * @return false when the vGPU offers no such calls (the CPU emulation, a vGPU that is not migratable)
         */
        public synchronized boolean offerDirectCalls() {
            if (executor == null || directCallers != null) {
                return directCallers != null;
            }
            RequestHandler handler = executor.handler();
            try {
                LibraryDirectCalls callers =
                        new LibraryDirectCalls(handler.gpu().window().vgpuIndex());
                if (!handler.offerDirectCalls(callers)) {
                    return false;
                }
                directCallers = callers;
                return true;
            } catch (VgpuException notOpen) {
                return false; // the HELLO did not open the vGPU: every call of the session is refused anyway
            }
        }

        /** The {@code CUcontext} of the GPU the vGPU runs on; {@link LibraryDirectCalls#NONE} when none here. */
        public long driverContext() {
            return driverHandle((onGpu, ids) -> onGpu.driverContext());
        }

        /** The {@code CUfunction} behind the session's function {@code id}; {@link LibraryDirectCalls#NONE} when none. */
        public long driverFunction(int id) {
            return driverHandle((onGpu, ids) -> onGpu.driverFunction(ids.function(id)));
        }

        /** The {@code CUstream} behind the session's stream {@code id} (0: the default one); NONE when none. */
        public long driverStream(int id) {
            return driverHandle((onGpu, ids) -> onGpu.driverStream(ids.stream(id)));
        }

        private long driverHandle(BiFunction<DriverHandles, SessionHandles, Long> lookup) {
            SessionExecutor opened = executor;
            return opened == null ? LibraryDirectCalls.NONE : opened.handler().driverHandle(lookup);
        }

        /** Ends the session (the library is done with it, or the process ends); frees what it made. */
        public synchronized void close() {
            end("the client closed the session");
            channel.close();
        }

        private void end(String reason) {
            if (executor != null && !ending) {
                ending = true;
                executor.endInline(reason);
            }
        }

        /**
         * Keeps each reply's bytes as it is written: a copy from the device writes its chunks from staging memory that
         * is reused once the write completes, and the library reads them only after the request returns.
         */
        private final class Outbox extends ChannelOutboundHandlerAdapter {
            @Override
            public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
                ByteBuf reply = (ByteBuf) msg;
                try {
                    outbox.writeBytes(reply);
                } finally {
                    reply.release();
                }
                promise.trySuccess();
            }
        }

        /** The session's requests, on the calling thread: the HELLO opens the session, the rest are run. */
        private final class Requests extends ChannelInboundHandlerAdapter {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object msg) {
                Frame frame = (Frame) msg;
                if (executor == null && frame.opcode() != Opcode.PING) {
                    handshake(ctx, frame);
                } else {
                    received(frame);
                }
            }

            /** The channel was closed: by the worker's close at the process's end, or by the session's own end. */
            @Override
            public void channelInactive(ChannelHandlerContext ctx) {
                end("the session's channel was closed");
                ctx.fireChannelInactive();
            }

            private void handshake(ChannelHandlerContext ctx, Frame hello) {
                SessionOpening.Opened opened;
                try {
                    opened = opening.open(hello, ctx.channel(), false);
                } catch (VgpuException refused) {
                    refuse(ctx, hello, refused);
                    return;
                }
                if (!(opened instanceof SessionOpening.Session opens)) {
                    refuse(
                            ctx,
                            hello,
                            new VgpuException(
                                    ErrorCode.VGPU_PROTOCOL_ERROR,
                                    "a session in the program's process has no stripes"));
                    return;
                }
                log.accept("worker " + config.workerId() + ": session for "
                        + opens.hello().window() + " in process");
                executor = new SessionExecutor(
                        ReplyBatcher.into(outbox, ctx.channel()),
                        ctx.channel(),
                        backend,
                        config,
                        new TrafficCounter(),
                        stripeJoins,
                        hostRegions);
                LiveSession claim = opens.claim();
                executor.outcome().thenAccept(outcome -> {
                    log.accept("worker " + config.workerId() + ": session ended: " + outcome.reason());
                    served.release(opens.key(), claim);
                    claim.end()
                            .complete(new WorkerReport(
                                    outcome.calls(), 0, 0, outcome.busyNanos(), outcome.clean(), outcome.reason()));
                });
                executor.runInline(hello);
            }

            private void refuse(ChannelHandlerContext ctx, Frame hello, VgpuException refused) {
                int requestId = hello.requestId();
                hello.release();
                log.accept("worker " + config.workerId() + ": refused a session in process: " + refused.getMessage());
                ByteBuf error = ctx.alloc().buffer(256);
                new ReplyEncoder().wrap(error).error(requestId, refused);
                ctx.writeAndFlush(error, ctx.voidPromise());
            }
        }
    }
}
