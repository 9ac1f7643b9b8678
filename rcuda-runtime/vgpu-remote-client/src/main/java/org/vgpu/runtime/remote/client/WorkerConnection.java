package org.vgpu.runtime.remote.client;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.protocol.SharedRegionOffer;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.transport.BulkBytePath;
import org.vgpu.runtime.remote.transport.InBandFrames;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.SameHostBulk;
import org.vgpu.runtime.remote.transport.SharedMemoryRing;
import org.vgpu.runtime.remote.transport.StripedBulk;
import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * The client end of one session with a GPU worker, as {@link RemoteGpu} uses it: requests sent
 * asynchronously or waited for, copies ({@link #copies}), goodbye. Its parts, one job each, along
 * the lines of grpc-java's Netty transport: {@link WorkerHandshake} opens the session,
 * {@link RequestBatcher} orders and batches the requests, {@link WaitingCalls} pairs replies with
 * the calls waiting for them, {@link ChunkedCopies} moves bulk data, {@link ChunkLanding} lands it in
 * the caller's memory, {@link Keepalive} pings a quiet worker, {@link InboundHandler} is the event
 * loop's end, and {@link ConnectionLoss} says when and why the worker is lost.
 *
 * <p>Asynchronous requests stay in the batch until a synchronizing call, a size bound or an
 * asynchronous device-to-host copy of a chunk or more, whose data takes longer to come than the
 * batching saves. Replies are read on the event loop, which completes the waiting calls and
 * copies device-to-host data straight into the caller's memory.
 *
 * <p>When the connection ends without a goodbye, or the worker stays silent past its idle timeout
 * (it answers keepalives even while a long kernel runs), every waiting and every later call fails
 * with VGPU_WORKER_LOST naming the worker; other connections are not affected.
 */
final class WorkerConnection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WorkerConnection.class);

    /** Writes one request frame; called under the batch lock with a fresh request id. */
    @FunctionalInterface
    interface Request {
        void encode(RequestEncoder encoder, int requestId);
    }

    private final WorkerEndpoint endpoint;
    private final RemoteConfig config;
    private final ConnectionLoss loss;
    private final ChunkLanding landing;
    private final RequestBatcher batcher;
    private final WaitingCalls calls;
    private final ChunkedCopies copies;
    private final WorkerHandshake handshake;
    private final Keepalive keepalive = new Keepalive();
    private final RemoteTraffic traffic = new RemoteTraffic();
    /** Set once by {@link #open} before the connection is handed out; the event loop side uses its context instead. */
    private Channel channel;
    /** The event loops of the session's stripes, when it has them; set by {@link #open}. */
    private EventLoopGroup stripeGroup;
    /** Why the session has no page-locked host memory shared with its worker; empty when it may ask. Set by open. */
    private String noSharedHostMemory = "";

    private WorkerConnection(WorkerEndpoint endpoint, RemoteConfig config) {
        this.endpoint = endpoint;
        this.config = config;
        this.loss = new ConnectionLoss(endpoint);
        this.landing = ChunkLanding.withCopierThreads("vgpu-copier-" + endpoint.workerId());
        this.batcher = new RequestBatcher(config, loss, traffic);
        this.calls = new WaitingCalls(loss, landing, config.spinNanos(), traffic);
        this.copies = new ChunkedCopies(config, batcher, calls, loss, landing);
        this.handshake = new WorkerHandshake(endpoint, config);
    }

    /**
     * Connects, says HELLO, waits for WELCOME and starts the keepalive.
     *
     * @param ssl TLS, or null for plain TCP; with TLS the worker's certificate must name {@code endpoint.host()}
     * @throws VgpuException VGPU_WORKER_LOST when the worker cannot be reached or does not answer in
     *         time, or the error the worker refused the session with (VGPU_AUTH_FAILED, ...)
     */
    static WorkerConnection open(
            EventLoopGroup group, WorkerEndpoint endpoint, VaWindow window, RemoteConfig config, SslContext ssl) {
        boolean thisHost = endpoint.socket().isPresent() || SameHostBulk.isThisHost(endpoint.host());
        int stripes = endpoint.socket().isPresent() ? 0 : StripedBulk.offeredTo(thisHost);
        boolean offerSharedMemory = SameHostBulk.directory().isPresent() && thisHost;
        String notOffered = SameHostBulk.directory().isEmpty()
                ? "-D" + SameHostBulk.PROPERTY + "=off"
                : "the worker is on another host";
        if (offerSharedMemory || stripes > 0) {
            WorkerConnection connection = open(group, endpoint, window, config, ssl, offerSharedMemory, stripes);
            if (connection == null && stripes > 0 && offerSharedMemory) {
                // a worker that predates stripes may still take shared memory
                connection = open(group, endpoint, window, config, ssl, true, 0);
            }
            if (connection != null) {
                // a worker that took the offer shares this host's memory; one that did not (its own shared memory
                // off, or one that predates it) would not answer a region's request either
                SharedRegionOffer region = connection.welcome().sharedRegion();
                connection.noSharedHostMemory = !offerSharedMemory
                        ? notOffered
                        : region.offered() ? "" : "the worker shares no memory with this host: " + region.note();
                return connection;
            }
            notOffered = "it refused a HELLO of protocol version " + Frames.PROTOCOL_VERSION
                    + (stripes > 0 ? " offering stripes" : "")
                    + ", as workers before that version do, and was greeted again in version "
                    + Frames.OLDEST_PROTOCOL_VERSION;
        }
        WorkerConnection connection = open(group, endpoint, window, config, ssl, false, 0);
        connection.copies.useBulkPath(inBand(endpoint, notOffered));
        connection.noSharedHostMemory = notOffered;
        return connection;
    }

    /**
     * One attempt.
     *
     * @return null when the worker refused a HELLO that offered shared memory as a protocol error, as a worker older
     *     than protocol version 2 does: the caller says HELLO again in version 1
     */
    private static WorkerConnection open(
            EventLoopGroup group,
            WorkerEndpoint endpoint,
            VaWindow window,
            RemoteConfig config,
            SslContext ssl,
            boolean offerSharedMemory,
            int offerStripes) {
        WorkerConnection connection = new WorkerConnection(endpoint, config);
        ChannelFuture connected = connection.handshake.connect(
                group,
                ssl,
                new InboundHandler(
                        connection.handshake,
                        connection.calls,
                        connection.keepalive,
                        connection.loss,
                        connection.batcher,
                        connection.traffic,
                        connection.copies::bulkPath));
        connection.channel = connected.channel();
        connection.batcher.attach(connection.channel);
        try {
            int helloId;
            connection.batcher.lock();
            try {
                helloId = connection.batcher.nextId();
            } finally {
                connection.batcher.unlock();
            }
            Welcome welcome = connection.handshake.hello(connected, helloId, window, offerSharedMemory, offerStripes);
            if (welcome.stripes().offered()) {
                connection.copies.useBulkPath(connection.joinStripes(ssl, window, welcome));
            } else if (offerSharedMemory) {
                connection.copies.useBulkPath(sharedRegion(endpoint, welcome.sharedRegion()));
            } else if (offerStripes > 0) {
                connection.copies.useBulkPath(inBand(
                        endpoint,
                        "the worker takes no stripes: " + welcome.stripes().note()));
            }
            connection.keepalive.start(connection.channel, welcome.idleTimeoutMillis());
            return connection;
        } catch (RuntimeException e) {
            connection.loss.closing();
            connection.channel.close().awaitUninterruptibly(1000);
            connection.closeStripes();
            if ((offerSharedMemory || offerStripes > 0)
                    && connection.handshake.wasRefusedByWorker()
                    && e instanceof VgpuException refused
                    && refused.code() == ErrorCode.VGPU_PROTOCOL_ERROR) {
                connection.landing.close();
                return null;
            }
            throw e;
        }
    }

    /**
     * Connects the stripes the worker's WELCOME offered, each on its own event loop of a group of the session's, and
     * joins each to the session with the WELCOME's stripe key, before any request follows the WELCOME. A stripe that
     * breaks later ends the session as a protocol error of the worker's.
     *
     * @throws VgpuException VGPU_WORKER_LOST when a stripe cannot connect
     */
    private BulkBytePath joinStripes(SslContext ssl, VaWindow window, Welcome welcome) {
        int count = welcome.stripes().stripes();
        stripeGroup = NettyTransport.newEventLoopGroup(count, "vgpu-stripe-" + endpoint.workerId(), 0);
        StripedStreams striped = new StripedStreams(
                count,
                Duration.ofMillis(welcome.idleTimeoutMillis()),
                failure -> channel.pipeline().fireExceptionCaught(failure));
        if (RemoteTuning.current().landStripedChunks()) {
            StraightDestinations straight = new StraightDestinations();
            striped.landIn(straight);
            copies.readStraightInto(straight);
            // a lost session's stripes stop (a worker may still be sending), and read into nobody's memory after that
            loss.beforeTelling(
                    () -> {
                        straight.stopExpecting();
                        striped.close();
                    },
                    straight::awaitQuiet);
        }
        List<ChannelFuture> connecting = new ArrayList<>();
        for (int index = 0; index < count; index++) {
            connecting.add(handshake.connectStripe(stripeGroup, ssl, striped.joinedReader(index)));
        }
        for (int index = 0; index < count; index++) {
            ChannelFuture connected = connecting.get(index).awaitUninterruptibly();
            if (!connected.isSuccess()) {
                striped.close();
                throw new VgpuException(
                        ErrorCode.VGPU_WORKER_LOST,
                        "cannot connect stripe " + index + " of " + count + " to " + endpoint.describe() + ": "
                                + VgpuFailure.describe(connected.cause()),
                        connected.cause());
            }
            striped.attach(index, connected.channel());
            handshake.joinAsStripe(connected.channel(), index, window, welcome);
        }
        LOG.debug("bulk bytes to {}: {}", endpoint.describe(), striped.describe());
        return striped;
    }

    /** Stops the stripes' event loops, if the session has stripes. */
    private void closeStripes() {
        EventLoopGroup stripes = stripeGroup;
        if (stripes != null) {
            copies.bulkPath().close();
            stripes.shutdownGracefully(0, 1, TimeUnit.SECONDS);
        }
    }

    /**
     * The region the worker offered, mapped and acknowledged before any request follows the WELCOME, or the frames
     * with one log line saying why not.
     */
    private static BulkBytePath sharedRegion(WorkerEndpoint endpoint, SharedRegionOffer offer) {
        if (!offer.offered()) {
            return inBand(endpoint, "the worker offers no shared region: " + offer.note());
        }
        try {
            SharedMemoryRing ring = SharedMemoryRing.open(Path.of(offer.path()), offer.nonce());
            ring.acknowledge();
            // the worker unlinks it at the first request too; whoever comes first, the name is gone at once
            ring.unlink();
            LOG.debug("bulk bytes to {}: {}", endpoint.describe(), ring.describe());
            return ring;
        } catch (IOException | RuntimeException e) {
            return inBand(
                    endpoint,
                    "the shared region it offered, " + offer.path() + ", cannot be mapped here: "
                            + VgpuFailure.describe(e));
        }
    }

    /** The frames, for {@code reason}, said in one log line. */
    private static BulkBytePath inBand(WorkerEndpoint endpoint, String reason) {
        InBandFrames path = InBandFrames.because(reason);
        LOG.info("bulk bytes to {}: {}", endpoint.describe(), path.describe());
        return path;
    }

    Welcome welcome() {
        return handshake.welcome();
    }

    /**
     * Why the session may not ask its worker for page-locked host memory both map ({@link SharedHostMemory}); empty
     * when it may: its HELLO offered shared memory, so the worker is on this host.
     */
    String noSharedHostMemory() {
        return noSharedHostMemory;
    }

    WorkerEndpoint endpoint() {
        return endpoint;
    }

    /** What the session has forwarded and waited for so far. */
    RemoteCounters counters() {
        return traffic.snapshot();
    }

    /** Host-to-device and device-to-host copies over this connection. */
    ChunkedCopies copies() {
        return copies;
    }

    /** Queues an asynchronous request: no reply, its failure surfaces at the next synchronizing call. */
    void send(Request request) {
        batcher.lock();
        try {
            loss.checkAlive();
            batcher.append(request, batcher.nextId());
            copies.requestAppended();
            if (batcher.full()) {
                batcher.flush();
            }
        } finally {
            batcher.unlock();
        }
    }

    /** Sends a request with everything batched before it and waits for its reply. */
    <T> T call(Request request, Function<ByteBuf, T> resultReader) {
        return call(request, resultReader, Long.MAX_VALUE);
    }

    private <T> T call(Request request, Function<ByteBuf, T> resultReader, long timeoutNanos) {
        PendingCall<T> call = new PendingCall<>(resultReader);
        batcher.lock();
        try {
            loss.checkAlive();
            calls.append(batcher, request, call);
            copies.requestAppended();
            batcher.flush();
        } finally {
            batcher.unlock();
        }
        return calls.await(call, timeoutNanos);
    }

    /**
     * Ends the session: the worker frees the vGPU and answers, then the connection closes. A worker
     * that is already lost is not waited for, since its vGPU went with it.
     *
     * @throws VgpuException what the worker reported while freeing the vGPU
     */
    void goodbye() {
        try {
            if (!loss.isLost()) {
                call(
                        RequestEncoder::goodbye,
                        ReplyDecoder::empty,
                        config.goodbyeTimeout().toNanos());
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
        loss.closing();
        copies.bulkPath().close();
        batcher.release();
        channel.close().awaitUninterruptibly(5000);
        closeStripes();
        landing.close();
    }
}
