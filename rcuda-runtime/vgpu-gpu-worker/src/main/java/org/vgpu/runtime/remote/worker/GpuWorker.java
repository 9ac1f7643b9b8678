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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.timeout.IdleStateHandler;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.ReadTargets;
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
    /** What its connections share: its configuration, limits, and where sessions start and end. */
    private final AcceptedConnection.Context connectionContext;

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
        this.log = log;
        this.sessions = sessions;
        this.served = new ServedSessions(sessions);
        this.stripeLoops = NettyTransport.newEventLoopGroup(StripedBulk.MAX_STRIPES, "vgpu-worker-stripe", 0);
        this.opening = new SessionOpening(config, authenticator, served, sessions, stripeJoins, stripeLoops);
        // how many connections it keeps at once: those signing in and the sessions it may serve together
        int maxConnections = sessions == Sessions.ONE_PER_VGPU
                ? MAX_CONNECTIONS_SIGNING_IN + BridgeContract.VGPUS_MAX
                : MAX_CONNECTIONS;
        this.connectionContext = new AcceptedConnection.Context(
                config,
                backend,
                log,
                opening,
                stripeJoins,
                hostRegions,
                new ConnectionLimits(config.workerId(), maxConnections),
                this::sessionEnded);
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
                    .childHandler(new ChannelInitializer<Channel>() {
                        @Override
                        protected void initChannel(Channel channel) {
                            // each connection its own, before its first read: one that becomes a stripe reads
                            // chunks straight into the landing slots through it
                            channel.config().setRecvByteBufAllocator(new ReadTargets(NettyTransport.receiveBuffers()));
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
                                            new AcceptedConnection(traffic, connectionContext));
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
}
