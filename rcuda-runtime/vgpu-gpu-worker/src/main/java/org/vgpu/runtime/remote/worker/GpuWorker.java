package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.UnresolvedAddressException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import javax.net.ssl.SSLException;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.handler.timeout.IdleStateHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.security.TlsFailures;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.StripedBulk;
import org.vgpu.runtime.remote.worker.ServedSessions.LiveSession;

/**
 * A GPU worker: serves the sessions of one remote vGPU on one device of {@code backend} (DESIGN.md,
 * "One worker process per remote vGPU"). Connections that fail the handshake (wrong protocol version,
 * bad token) are refused and the worker keeps waiting for its client; an authenticated HELLO claims
 * the session and any other one is refused while it runs. The session ends when the client says
 * goodbye, closes or loses the connection, sends nothing for the idle timeout, or breaks the
 * protocol; then the vGPU is freed.
 *
 * <p>How many sessions, {@link Sessions}: a lender's worker serves {@link Sessions#ONE ONE}, then
 * {@link #report()} completes; a worker that no client opens a session with within the idle timeout
 * ends too, so a lent GPU is never held by a worker nobody uses. A holder job's worker serves
 * {@link Sessions#ONE_AFTER_ANOTHER one after another} until it is closed: every step of the job,
 * and the app after {@code vgpu run}'s checks, opens the borrowed vGPU again, and a session that
 * ends because the vGPU moved away ends like any other; the idle timeout bounds each session's
 * silence, and the holder's life is the tracker's to end (it cancels the holder job). A launcher's local worker
 * ({@link #startOnSocket}) serves {@link Sessions#ONE_PER_VGPU} on a Unix domain socket: the vGPUs of the one program
 * it runs, each in its own session, several at once.
 */
public final class GpuWorker implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(GpuWorker.class);

    /** How many sessions a worker serves. */
    public enum Sessions {
        /** One, then the worker is done: a lender's worker. */
        ONE,
        /** One after another until the worker is closed: a holder job's worker, for every step of the job. */
        ONE_AFTER_ANOTHER,
        /**
         * Several at once, at most one per vGPU (the HELLO's window names it), each vGPU's one after another until the
         * worker is closed: a launcher's local worker, serving the vGPUs of the program it runs.
         */
        ONE_PER_VGPU
    }

    /** The outbound buffer a connection may fill before writers wait: a few copy chunks in flight. */
    static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(4 << 20, 8 << 20);

    /**
     * Connections that have not signed in (no accepted HELLO yet) a worker keeps at once; more are
     * refused as they arrive. A worker has one client, which connects once per session and retries
     * after a lost connection: 16 leaves room for those and for refused strangers being answered,
     * while bounding what peers without a token hold to 16 times a HELLO
     * ({@link RequestDecoder#MAX_HELLO_BODY_BYTES}), the only frame they may send besides PING.
     */
    public static final int MAX_CONNECTIONS_SIGNING_IN = 16;

    /**
     * Connections a worker of one session at a time keeps at once: those signing in and the one session it serves (a
     * second HELLO is refused while a session runs). A local worker keeps one more for each vGPU a job may have.
     */
    public static final int MAX_CONNECTIONS = MAX_CONNECTIONS_SIGNING_IN + 1;

    /**
     * How long a connection may take to sign in (TLS, then an accepted HELLO), or the idle timeout
     * when that is shorter: vgpu's client sends its HELLO as soon as it is connected, and a peer that
     * trickles one in byte by byte would otherwise hold one of the
     * {@link #MAX_CONNECTIONS_SIGNING_IN} places for as long as it keeps sending.
     */
    public static final Duration SIGN_IN_BOUND = Duration.ofSeconds(10);

    /** Why a peer that has not signed in may send only small frames, for the protocol error it gets. */
    private static final String SIGN_IN_FRAME_LIMIT =
            "before the client signed in (a HELLO is at most " + RequestDecoder.MAX_HELLO_BODY_BYTES + " bytes)";

    private final WorkerConfig config;
    private final GpuBackend backend;
    private final Consumer<String> log;
    private final Sessions sessions;
    private final EventLoopGroup group;
    /**
     * The stripes' own event loops, one thread per stripe index (started as a stripe first uses it): bulk bytes over
     * several connections are read and written in parallel, not all on {@link #group}'s one thread.
     */
    private final EventLoopGroup stripeLoops;

    private final Channel serverChannel;
    /** Where the worker listens: its TCP address, or its Unix domain socket's path. */
    private final String listening;
    /** How many connections it keeps at once: those signing in and the sessions it may serve together. */
    private final int maxConnections;

    private final ServedSessions served;
    /** Answers each connection's first frame. */
    private final SessionOpening opening;
    /** The stripe keys of the sessions served now, for the stripe connections that join them. */
    private final StripeJoins stripeJoins = new StripeJoins();
    /**
     * The page-locked host memory shared with the programs of this host: a local worker's, and a TCP worker's clients
     * that offered shared memory ({@link BulkCopies#clientOnThisHost}).
     */
    private final SharedHostRegions hostRegions;
    /** Open connections, and those of them that have not signed in; counted on the event loop. */
    private final AtomicInteger connections = new AtomicInteger();

    private final AtomicInteger connectionsSigningIn = new AtomicInteger();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final CompletableFuture<WorkerReport> report = new CompletableFuture<>();

    private GpuWorker(
            WorkerConfig config,
            GpuBackend backend,
            SessionAuthenticator authenticator,
            SslContext ssl,
            Consumer<String> log,
            Sessions sessions,
            Optional<Path> socket,
            SharedHostRegions hostRegions) {
        this.config = config;
        this.hostRegions = hostRegions;
        this.backend = backend;
        this.log = log;
        this.sessions = sessions;
        this.served = new ServedSessions(sessions);
        this.stripeLoops = NettyTransport.newEventLoopGroup(StripedBulk.MAX_STRIPES, "vgpu-worker-stripe", 0);
        this.opening = new SessionOpening(config, authenticator, served, sessions, stripeJoins, stripeLoops);
        this.maxConnections = sessions == Sessions.ONE_PER_VGPU
                ? MAX_CONNECTIONS_SIGNING_IN + BridgeContract.VGPUS_MAX
                : MAX_CONNECTIONS;
        this.listening = socket.map(path -> "unix:" + path).orElse(config.listenHost() + ":" + config.listenPort());
        this.group = NettyTransport.newEventLoopGroup(1, "vgpu-worker-io", config.spinNanos());
        try {
            ServerBootstrap bootstrap = new ServerBootstrap().group(group);
            SocketAddress address;
            if (socket.isPresent()) {
                bootstrap.channel(NettyTransport.serverDomainSocketChannel());
                address = NettyTransport.domainSocketAddress(socket.get());
            } else {
                NettyTransport.socketBuffers(bootstrap::childOption);
                bootstrap.channel(NettyTransport.serverSocketChannel()).childOption(ChannelOption.TCP_NODELAY, true);
                // resolved here, as Netty's bind(host, port) does; an unknown host fails the bind
                address = new InetSocketAddress(config.listenHost(), config.listenPort());
            }
            this.serverChannel = bootstrap
                    .handler(new AcceptFailures(config.workerId(), log, System::nanoTime))
                    .childOption(ChannelOption.WRITE_BUFFER_WATER_MARK, WATER_MARK)
                    .childOption(
                            ChannelOption.RECVBUF_ALLOCATOR, new AdaptiveRecvByteBufAllocator(512, 16 << 10, 1 << 20))
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel channel) {
                            TrafficCounter traffic = new TrafficCounter();
                            channel.pipeline().addLast(traffic);
                            if (ssl != null) {
                                channel.pipeline()
                                        .addLast(
                                                new PlainClientRefusal(config.workerId(), log),
                                                ssl.newHandler(channel.alloc()));
                            }
                            channel.pipeline()
                                    .addLast(
                                            new FrameDecoder(
                                                    Opcode.Direction.REQUEST,
                                                    RequestDecoder.MAX_HELLO_BODY_BYTES,
                                                    SIGN_IN_FRAME_LIMIT),
                                            new IdleStateHandler(
                                                    config.idleTimeout().toMillis(), 0, 0, TimeUnit.MILLISECONDS),
                                            new Connection(traffic));
                        }
                    })
                    .bind(address)
                    .syncUninterruptibly()
                    .channel();
        } catch (Exception e) {
            // Netty rethrows a failed bind's BindException unchecked; every cause is a bad listen address here
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            stripeLoops.shutdownGracefully(0, 1, TimeUnit.SECONDS);
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN,
                    "worker " + config.workerId() + " cannot listen on " + listening + ": " + bindFailure(e),
                    e);
        }
        if (sessions == Sessions.ONE) {
            scheduleGiveUpWithoutClient();
        }
    }

    private void scheduleGiveUpWithoutClient() {
        group.schedule(
                () -> {
                    if (!served.anyClaimed()) {
                        finish(new WorkerReport(
                                0,
                                0,
                                0,
                                0,
                                false,
                                "no client opened a session within "
                                        + config.idleTimeout().toMillis() + " ms"));
                    }
                },
                config.idleTimeout().toMillis(),
                TimeUnit.MILLISECONDS);
    }

    /** A worker that serves {@link Sessions#ONE one session}, as a lender starts it. */
    public static GpuWorker start(
            WorkerConfig config,
            GpuBackend backend,
            SessionAuthenticator authenticator,
            SslContext ssl,
            Consumer<String> log) {
        return start(config, backend, authenticator, ssl, log, Sessions.ONE);
    }

    /**
     * Listens for the session's client.
     *
     * @param ssl      TLS for the connection, or null for plain TCP
     * @param log      where the worker tells what it does (refused connections, why a session ended)
     * @param sessions one session, or one after another until {@link #close}
     */
    public static GpuWorker start(
            WorkerConfig config,
            GpuBackend backend,
            SessionAuthenticator authenticator,
            SslContext ssl,
            Consumer<String> log,
            Sessions sessions) {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(authenticator, "authenticator");
        Objects.requireNonNull(log, "log");
        Objects.requireNonNull(sessions, "sessions");
        return new GpuWorker(
                config,
                backend,
                authenticator,
                ssl,
                log,
                sessions,
                Optional.empty(),
                SharedHostRegions.forThisHost(backend));
    }

    /**
     * A local worker: listens on the Unix domain socket {@code socket} (created here; its directory says who may
     * reach it) and serves {@link Sessions#ONE_PER_VGPU}, without TLS. {@code config}'s host and port are not used.
     *
     * @param authenticator the check of each HELLO, with the connecting process's user ({@link SameUserSessions})
     */
    public static GpuWorker startOnSocket(
            Path socket,
            WorkerConfig config,
            GpuBackend backend,
            SessionAuthenticator authenticator,
            Consumer<String> log) {
        Objects.requireNonNull(socket, "socket");
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(authenticator, "authenticator");
        Objects.requireNonNull(log, "log");
        return startOnSocket(socket, config, backend, authenticator, log, SharedHostRegions.forThisHost(backend));
    }

    /** As the public {@code startOnSocket}, sharing host memory through {@code hostRegions}. */
    static GpuWorker startOnSocket(
            Path socket,
            WorkerConfig config,
            GpuBackend backend,
            SessionAuthenticator authenticator,
            Consumer<String> log,
            SharedHostRegions hostRegions) {
        return new GpuWorker(
                config, backend, authenticator, null, log, Sessions.ONE_PER_VGPU, Optional.of(socket), hostRegions);
    }

    /** The most bytes of page-locked host memory this worker shares with its clients at once; 0 when it shares none. */
    public long sharedHostBytes() {
        return hostRegions.boundBytes();
    }

    /** How many bytes of page-locked host memory this worker shares with its clients now. */
    long sharedHostBytesHeld() {
        return hostRegions.heldBytes();
    }

    /** The listening socket's channel, for tests that play what the operating system does to it. */
    Channel listeningChannel() {
        return serverChannel;
    }

    /**
     * The address the worker listens on (with the real port when port 0 was asked for).
     *
     * @throws IllegalStateException for a worker on a Unix domain socket, whose path its starter gave
     */
    public InetSocketAddress address() {
        if (!(serverChannel.localAddress() instanceof InetSocketAddress address)) {
            throw new IllegalStateException("worker " + config.workerId() + " listens on " + listening + ", not TCP");
        }
        return address;
    }

    /**
     * Completes when the worker is done, with what it served: for {@link Sessions#ONE}, when the session is over (or
     * never began); for the others, when the worker is closed, with every session's figures.
     */
    public CompletableFuture<WorkerReport> report() {
        return report;
    }

    /** Waits for {@link #report()}. */
    public WorkerReport awaitReport() throws InterruptedException {
        try {
            return report.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("the worker's report failed", e.getCause());
        }
    }

    /**
     * Waits until the sessions served now have ended (the vGPU moved away, or its client ended it), at most
     * {@code bound} in all; at once when none runs.
     *
     * @return whether none of them runs any more
     */
    public boolean awaitSessionEnd(Duration bound) throws InterruptedException {
        return served.awaitEnd(bound);
    }

    /** Why a bind failed, in vgpu's words: Netty rethrows the JDK's exception or its native transport's. */
    private static String bindFailure(Exception failure) {
        return switch (failure) {
            case IOException io -> IoReasons.of(io);
            case UnresolvedAddressException unresolved -> "unknown host";
            default -> "the address cannot be listened on";
        };
    }

    /** Ends the session if one runs, frees the vGPU, stops listening, and lets the last replies go out. */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        served.endAll(message -> log.accept("worker " + config.workerId() + ": " + message));
        report.complete(
                sessions == Sessions.ONE
                        ? new WorkerReport(0, 0, 0, 0, false, "the worker was closed")
                        : served.servedSoFar("the worker was closed"));
        serverChannel.close().syncUninterruptibly();
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        stripeLoops.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        hostRegions.close();
    }

    /**
     * A session is over and its vGPU freed: a one-session worker is done; the others add the session's figures to
     * their own and take the next client (of that vGPU).
     */
    private void sessionEnded(int key, LiveSession ended, WorkerReport session) {
        if (sessions == Sessions.ONE) {
            finish(session);
            // after the report: close() waits for this, and its own report must not win over the session's
            ended.end().complete(session);
            return;
        }
        int count = served.addEnded(session);
        log.accept("worker " + config.workerId() + ": session " + count + " ended: " + session.endReason()
                + "; waiting for the job's next session");
        served.release(key, ended);
        ended.end().complete(session);
    }

    private void finish(WorkerReport result) {
        if (report.complete(result)) {
            log.accept("worker " + config.workerId() + ": done: " + result.endReason());
            serverChannel.close();
        }
    }

    /**
     * One connection, on the event loop: answers the handshake and keepalives itself and queues
     * everything else to the session's GPU thread.
     */
    private final class Connection extends ChannelInboundHandlerAdapter {
        private final TrafficCounter traffic;
        private SessionExecutor session;
        /** This connection's session among the worker's, once its HELLO claimed one. */
        private LiveSession claim;
        /** Whether this connection is counted among those signing in, until its HELLO is accepted or it closes. */
        private boolean signingIn;
        /** Set when the connection was refused as one too many: what it sends before it closes is dropped. */
        private boolean overLimit;
        /** Closes the connection if it has not signed in by then. */
        private ScheduledFuture<?> signInDeadline;

        Connection(TrafficCounter traffic) {
            this.traffic = traffic;
        }

        /** Counts the connection, or refuses it when the worker holds as many as it keeps. */
        @Override
        public void channelActive(ChannelHandlerContext ctx) {
            int open = connections.incrementAndGet();
            int waiting = connectionsSigningIn.incrementAndGet();
            signingIn = true;
            if (open > maxConnections || waiting > MAX_CONNECTIONS_SIGNING_IN) {
                VgpuException refused = new VgpuException(
                        ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                        "worker " + config.workerId() + " is busy: "
                                + (waiting > MAX_CONNECTIONS_SIGNING_IN
                                        ? MAX_CONNECTIONS_SIGNING_IN + " connections are already signing in"
                                        : maxConnections + " connections are already open")
                                + "; try again shortly");
                log.accept("worker " + config.workerId() + ": refused "
                        + ctx.channel().remoteAddress() + ": " + refused.getMessage());
                overLimit = true;
                replyAndClose(ctx, 0, refused);
            } else {
                Duration bound =
                        config.idleTimeout().compareTo(SIGN_IN_BOUND) < 0 ? config.idleTimeout() : SIGN_IN_BOUND;
                signInDeadline =
                        ctx.executor().schedule(() -> signInTooSlow(ctx, bound), bound.toNanos(), TimeUnit.NANOSECONDS);
            }
            ctx.fireChannelActive();
        }

        private void signInTooSlow(ChannelHandlerContext ctx, Duration bound) {
            if (signingIn && ctx.channel().isActive()) {
                VgpuException refused = new VgpuException(
                        ErrorCode.VGPU_AUTH_FAILED,
                        "worker " + config.workerId() + " closes the connection: no session was opened within "
                                + bound.toMillis() + " ms of connecting");
                log.accept("worker " + config.workerId() + ": refused "
                        + ctx.channel().remoteAddress() + ": " + refused.getMessage());
                replyAndClose(ctx, 0, refused);
            }
        }

        private void signedIn(ChannelHandlerContext ctx) {
            signingIn = false;
            signInDeadline.cancel(false);
            connectionsSigningIn.decrementAndGet();
            ctx.pipeline().get(FrameDecoder.class).allowFullFrames();
        }

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            Frame frame = (Frame) msg;
            if (overLimit) {
                frame.release();
            } else if (frame.opcode() == Opcode.PING) {
                int requestId = frame.requestId();
                frame.release();
                ByteBuf pong = ctx.alloc().buffer(Frames.HEADER_BYTES);
                new ReplyEncoder().wrap(pong).pong(requestId);
                ctx.writeAndFlush(pong, ctx.voidPromise());
            } else if (session != null) {
                if (frame.opcode() == Opcode.GOODBYE) {
                    claim.leave();
                }
                session.submit(frame);
            } else {
                handshake(ctx, frame, true);
            }
        }

        private void handshake(ChannelHandlerContext ctx, Frame frame, boolean mayWait) {
            SessionOpening.Opened opened;
            try {
                opened = opening.open(frame, ctx.channel(), mayWait);
            } catch (VgpuException refused) {
                refuse(ctx, frame, refused);
                return;
            }
            switch (opened) {
                case SessionOpening.AfterHolder after -> awaitHolder(ctx, frame, after.holder());
                case SessionOpening.Stripe stripe -> {
                    signedIn(ctx);
                    opening.becomeStripe(ctx, stripe);
                    frame.release();
                }
                case SessionOpening.Session opens -> {
                    signedIn(ctx);
                    startSession(ctx, opens, frame);
                }
            }
        }

        /** Holds the HELLO, reading nothing more, until the leaving session that holds its vGPU has ended. */
        private void awaitHolder(ChannelHandlerContext ctx, Frame hello, LiveSession holder) {
            log.accept("worker " + config.workerId() + ": the session from "
                    + ctx.channel().remoteAddress() + " waits for the one before it on its vGPU to end");
            ctx.channel().config().setAutoRead(false);
            holder.end()
                    .copy()
                    .orTimeout(SessionOpening.HANDOVER_BOUND.toNanos(), TimeUnit.NANOSECONDS)
                    .whenComplete((ended, late) -> ctx.executor().execute(() -> {
                        if (!ctx.channel().isActive()) {
                            hello.release();
                        } else if (late instanceof TimeoutException) {
                            refuse(
                                    ctx,
                                    hello,
                                    new VgpuException(
                                            ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                                            "worker " + config.workerId() + ": the session before this one on its"
                                                    + " vGPU was still ending "
                                                    + SessionOpening.HANDOVER_BOUND.toSeconds()
                                                    + " s after its client left; try again shortly"));
                        } else {
                            ctx.channel().config().setAutoRead(true);
                            handshake(ctx, hello, false);
                        }
                    }));
        }

        private void refuse(ChannelHandlerContext ctx, Frame frame, VgpuException refused) {
            int requestId = frame.requestId();
            frame.release();
            log.accept("worker " + config.workerId() + ": refused "
                    + ctx.channel().remoteAddress() + ": " + refused.getMessage());
            replyAndClose(ctx, requestId, refused);
        }

        private void startSession(ChannelHandlerContext ctx, SessionOpening.Session opens, Frame hello) {
            log.accept("worker " + config.workerId() + ": session for "
                    + opens.hello().window() + " from " + ctx.channel().remoteAddress());
            claim = opens.claim();
            session = new SessionExecutor(ctx.channel(), backend, config, traffic, stripeJoins, hostRegions);
            session.outcome()
                    .thenAccept(outcome -> ctx.channel()
                            .closeFuture()
                            .addListener(closed -> sessionEnded(
                                    opens.key(),
                                    opens.claim(),
                                    new WorkerReport(
                                            outcome.calls(),
                                            traffic.bytesIn(),
                                            traffic.bytesOut(),
                                            outcome.busyNanos(),
                                            outcome.clean(),
                                            outcome.reason()))));
            session.start();
            session.submit(hello);
        }

        @Override
        public void channelInactive(ChannelHandlerContext ctx) {
            connections.decrementAndGet();
            if (signInDeadline != null) {
                signInDeadline.cancel(false);
            }
            if (signingIn) {
                signingIn = false;
                connectionsSigningIn.decrementAndGet();
            }
            end("the client closed the connection");
            ctx.fireChannelInactive();
        }

        @Override
        public void channelWritabilityChanged(ChannelHandlerContext ctx) {
            if (session != null && ctx.channel().isWritable()) {
                session.writable();
            }
            ctx.fireChannelWritabilityChanged();
        }

        @Override
        public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
            if (event instanceof IdleStateEvent) {
                end("no frame from the client for " + config.idleTimeout().toMillis() + " ms");
                ctx.close();
            } else {
                ctx.fireUserEventTriggered(event);
            }
        }

        @Override
        public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
            Throwable failure =
                    cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
            if (failure instanceof VgpuException violation && violation.code() == ErrorCode.VGPU_PROTOCOL_ERROR) {
                if (session == null) {
                    log.accept("worker " + config.workerId() + ": refused "
                            + ctx.channel().remoteAddress() + ": " + violation.getMessage());
                }
                end("protocol error: " + violation.detail());
                if (ctx.channel().isActive()) {
                    replyAndClose(ctx, 0, violation);
                }
            } else {
                if (!(failure instanceof IOException || failure instanceof VgpuFailure)) {
                    LOG.warn("worker {}: the connection failed unexpectedly", config.workerId(), failure);
                }
                end("the connection failed: "
                        + (failure instanceof SSLException tls
                                ? "TLS: " + TlsFailures.reason(tls)
                                : VgpuFailure.describe(failure)));
                ctx.close();
            }
        }

        private void end(String reason) {
            if (session != null) {
                claim.leave();
                session.end(reason);
            }
        }

        private void replyAndClose(ChannelHandlerContext ctx, int requestId, VgpuException failure) {
            ByteBuf error = ctx.alloc().buffer(256);
            new ReplyEncoder().wrap(error).error(requestId, failure);
            ctx.writeAndFlush(error).addListener(ChannelFutureListener.CLOSE);
        }
    }
}
