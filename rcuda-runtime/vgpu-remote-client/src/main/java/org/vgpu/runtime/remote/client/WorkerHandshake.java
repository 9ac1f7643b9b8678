package org.vgpu.runtime.remote.client;

import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import javax.net.ssl.SSLParameters;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.WriteBufferWaterMark;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslHandler;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.security.PinnedCertificate;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.ReadTargets;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * Opening a session with a worker: the TCP connection (TLS where asked for) with the channel's
 * options and pipeline, then HELLO, answered by WELCOME or by the error the worker refused the
 * session with.
 */
final class WorkerHandshake {
    private static final WriteBufferWaterMark WATER_MARK = new WriteBufferWaterMark(4 << 20, 8 << 20);

    private final WorkerEndpoint endpoint;
    private final RemoteConfig config;
    private final CompletableFuture<Welcome> welcome = new CompletableFuture<>();
    /** Whether the worker answered HELLO with an ERROR, rather than the connection failing otherwise. */
    private volatile boolean refusedByWorker;

    WorkerHandshake(WorkerEndpoint endpoint, RemoteConfig config) {
        this.endpoint = endpoint;
        this.config = config;
    }

    /**
     * Starts connecting to the worker; replies go to {@code handler}.
     *
     * @param ssl TLS, or null for plain TCP; with TLS the worker's certificate must name {@code endpoint.host()}. When
     *     the endpoint's token pins the worker's certificate ({@link WorkerEndpoint#pinnedCertificate}) the client
     *     speaks TLS accepting that certificate alone, whatever {@code ssl} is. A worker on a Unix domain socket
     *     ({@link WorkerEndpoint#socket}) is connected to at its path.
     */
    ChannelFuture connect(EventLoopGroup group, SslContext ssl, InboundHandler handler) {
        return connect(
                group,
                ssl,
                WATER_MARK,
                channel -> channel.pipeline().addLast(new FrameDecoder(Opcode.Direction.REPLY), handler));
    }

    /**
     * Starts connecting a stripe of the session: TLS exactly as the session's own connection has it, then
     * {@code reader}; the stripe's write buffer is bounded by {@link StripedStreams#WRITE_HIGH_WATER_BYTES}. The
     * stripe reads through {@link ReadTargets} of its own, so that its reader may have chunks read straight into
     * their destination.
     */
    ChannelFuture connectStripe(EventLoopGroup group, SslContext ssl, ChannelHandler reader) {
        return connect(
                group,
                ssl,
                new WriteBufferWaterMark(
                        StripedStreams.WRITE_HIGH_WATER_BYTES / 2, StripedStreams.WRITE_HIGH_WATER_BYTES),
                channel -> {
                    channel.config().setRecvByteBufAllocator(new ReadTargets(NettyTransport.receiveBuffers()));
                    channel.pipeline().addLast(reader);
                });
    }

    /**
     * Says HELLO on {@code stripe} as stripe {@code index} of the session {@code welcome} opened, presenting its
     * stripe key; the worker answers nothing, or an ERROR and a close.
     */
    void joinAsStripe(Channel stripe, int index, VaWindow window, Welcome welcome) {
        ByteBuf hello = stripe.alloc().buffer(256);
        new RequestEncoder()
                .wrap(hello)
                .hello(0, new Hello(welcome.protocolVersion(), welcome.stripes().key(), window, false, 0, index));
        stripe.writeAndFlush(hello, stripe.voidPromise());
    }

    private ChannelFuture connect(
            EventLoopGroup group, SslContext ssl, WriteBufferWaterMark waterMark, Consumer<Channel> pipelineEnd) {
        Optional<CertificatePin> pin = endpoint.pinnedCertificate();
        SslContext tls = pin.map(PinnedCertificate::clientContext).orElse(ssl);
        Bootstrap bootstrap = new Bootstrap().group(group);
        Optional<Path> socket = endpoint.socket();
        if (socket.isPresent()) {
            bootstrap.channel(NettyTransport.domainSocketChannel());
        } else {
            NettyTransport.socketBuffers(bootstrap::option);
            bootstrap.channel(NettyTransport.socketChannel()).option(ChannelOption.TCP_NODELAY, true);
        }
        bootstrap
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int)
                        Math.min(Integer.MAX_VALUE, config.connectTimeout().toMillis()))
                .option(ChannelOption.WRITE_BUFFER_WATER_MARK, waterMark)
                .option(ChannelOption.RECVBUF_ALLOCATOR, NettyTransport.receiveBuffers())
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                        if (tls != null) {
                            SslHandler handler = tls.newHandler(channel.alloc(), endpoint.host(), endpoint.port());
                            // a pinned certificate is the worker's own, naming no host: the pin alone decides
                            channel.pipeline().addLast(pin.isPresent() ? handler : verifyingHostName(handler));
                        }
                        pipelineEnd.accept(channel);
                    }
                });
        return socket.isPresent()
                ? bootstrap.connect(NettyTransport.domainSocketAddress(socket.get()))
                : bootstrap.connect(endpoint.host(), endpoint.port());
    }

    /** The worker's certificate must name the host this client connects to, whatever context the caller built. */
    private static SslHandler verifyingHostName(SslHandler handler) {
        SSLParameters parameters = handler.engine().getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        handler.engine().setSSLParameters(parameters);
        return handler;
    }

    /**
     * Waits for the connection, says HELLO with request id {@code requestId} (in protocol version 2 offering shared
     * memory where {@code offerSharedMemory} and {@code offerStripes} stripes where that is above 0, else in version
     * 1) and waits for WELCOME.
     *
     * @throws VgpuException VGPU_WORKER_LOST when the worker cannot be reached or does not answer in
     *         time, or the error the worker refused the session with (VGPU_AUTH_FAILED, ...)
     */
    Welcome hello(
            ChannelFuture connected, int requestId, VaWindow window, boolean offerSharedMemory, int offerStripes) {
        connected.awaitUninterruptibly();
        if (!connected.isSuccess()) {
            throw new VgpuException(
                    ErrorCode.VGPU_WORKER_LOST,
                    "cannot connect to " + endpoint.describe() + ": " + VgpuFailure.describe(connected.cause()),
                    connected.cause());
        }
        Channel channel = connected.channel();
        ByteBuf hello = channel.alloc().buffer(256);
        // a HELLO of version 1 where nothing is offered: a worker that predates version 2 takes it as it is
        int version = offerSharedMemory || offerStripes > 0 ? Frames.PROTOCOL_VERSION : Frames.OLDEST_PROTOCOL_VERSION;
        new RequestEncoder()
                .wrap(hello)
                .hello(requestId, new Hello(version, endpoint.token(), window, offerSharedMemory, offerStripes, -1));
        channel.writeAndFlush(hello, channel.voidPromise());
        Welcome welcomed;
        try {
            welcomed = welcome.get(config.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof VgpuException refused
                    ? new VgpuException(refused.code(), refused.detail(), refused)
                    : new VgpuException(
                            ErrorCode.VGPU_WORKER_LOST,
                            endpoint.describe() + " failed the handshake: " + VgpuFailure.describe(e.getCause()),
                            e);
        } catch (TimeoutException e) {
            throw new VgpuException(
                    ErrorCode.VGPU_WORKER_LOST,
                    endpoint.describe() + " did not answer HELLO within "
                            + config.connectTimeout().toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new VgpuException(
                    ErrorCode.VGPU_WORKER_LOST, "interrupted while opening a session with " + endpoint.describe());
        }
        if (welcomed.protocolVersion() != version) {
            throw Frames.violation(endpoint.describe() + " answered in protocol version " + welcomed.protocolVersion()
                    + " a HELLO of version " + version);
        }
        return welcomed;
    }

    /** The worker's WELCOME, once it came; null before. */
    Welcome welcome() {
        return welcome.getNow(null);
    }

    /** Whether the handshake is over, the session open or refused. */
    boolean isDone() {
        return welcome.isDone();
    }

    /** WELCOME arrived. Event loop. */
    void welcomed(Welcome welcomed) {
        if (!welcome.complete(welcomed)) {
            throw Frames.violation("WELCOME arrived in an open session");
        }
    }

    /** The worker answered HELLO with an ERROR; {@link #fail} follows. Event loop. */
    void refused() {
        refusedByWorker = true;
    }

    /** Whether the worker itself refused the HELLO (an ERROR reply), not a broken or lost connection. */
    boolean wasRefusedByWorker() {
        return refusedByWorker;
    }

    /** The connection was lost: a HELLO still waiting fails with that. Event loop. */
    void fail(VgpuException lost) {
        welcome.completeExceptionally(lost);
    }
}
