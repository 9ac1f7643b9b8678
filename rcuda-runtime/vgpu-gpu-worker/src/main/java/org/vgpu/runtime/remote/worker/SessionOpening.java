package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.ChannelPromise;
import io.netty.channel.EventLoop;
import io.netty.handler.timeout.IdleStateHandler;
import io.netty.util.concurrent.EventExecutor;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.transport.NettyTransport;
import org.vgpu.runtime.remote.transport.StripedStreams;
import org.vgpu.runtime.remote.worker.ServedSessions.LiveSession;

/**
 * What a connection's first frame opens: a session, when its HELLO speaks a protocol version the worker speaks, carries
 * a token the authenticator accepts and claims a session the worker may serve now; or a stripe of a session already
 * open, when it presents that session's stripe key. Everything else is refused with the reason the client gets.
 */
final class SessionOpening {
    /** What the first frame opened. */
    sealed interface Opened {}

    /** A session: its HELLO, the key it claimed among the worker's sessions, and the claim. */
    record Session(Hello hello, int key, LiveSession claim) implements Opened {}

    /**
     * A stripe of an open session: from now on the connection carries that session's chunks, written once
     * {@code settled}, when {@link #becomeStripe} moved it onto its event loop.
     */
    record Stripe(StripedStreams stripes, int index, ChannelPromise settled) implements Opened {}

    /**
     * Nothing yet: the session it claims is held by one that is leaving (its process said goodbye, or went away, and
     * the worker frees what it left). The HELLO is tried once more when {@code holder} has ended, at most
     * {@link #HANDOVER_BOUND} later: a program's next process, started the moment the last one exited, is served.
     */
    record AfterHolder(LiveSession holder) implements Opened {}

    /** How long a HELLO waits for a leaving session of its vGPU to end, well within the sign-in bound. */
    static final Duration HANDOVER_BOUND = Duration.ofSeconds(5);

    private final WorkerConfig config;
    private final SessionAuthenticator authenticator;
    private final ServedSessions served;
    private final GpuWorker.Sessions sessions;
    private final StripeJoins stripeJoins;
    /**
     * The event loops stripes are read and written on, stripe {@code i} on the {@code i}-th: a session's stripes each
     * have a thread of their own, apart from the loop that accepts connections and reads the sessions' frames. None
     * for a worker that takes no stripes (one in the program's own process).
     */
    private final List<EventLoop> stripeLoops = new ArrayList<>();

    SessionOpening(
            WorkerConfig config,
            SessionAuthenticator authenticator,
            ServedSessions served,
            GpuWorker.Sessions sessions,
            StripeJoins stripeJoins,
            Iterable<? extends EventExecutor> stripeLoops) {
        this.config = config;
        this.authenticator = authenticator;
        this.served = served;
        this.sessions = sessions;
        this.stripeJoins = stripeJoins;
        stripeLoops.forEach(loop -> this.stripeLoops.add((EventLoop) loop));
    }

    /**
     * Opens what {@code frame}, the connection's first, asks for; the frame stays the caller's. A session claimed by one
     * that is leaving is {@link AfterHolder} when {@code mayWait}, else refused like one claimed by a running session.
     *
     * @throws VgpuException VGPU_PROTOCOL_ERROR for a protocol version the worker does not speak or a stripe the
     *     session does not have; VGPU_AUTH_FAILED for a token or stripe key not accepted; CUDA_ERROR_NOT_PERMITTED
     *     while the session it claims is served
     */
    Opened open(Frame frame, Channel channel, boolean mayWait) {
        Hello hello = RequestDecoder.hello(frame);
        if (hello.protocolVersion() < Frames.OLDEST_PROTOCOL_VERSION
                || hello.protocolVersion() > Frames.PROTOCOL_VERSION) {
            throw Frames.violation("the client speaks protocol version " + hello.protocolVersion() + ", worker "
                    + config.workerId() + " speaks versions " + Frames.OLDEST_PROTOCOL_VERSION + " to "
                    + Frames.PROTOCOL_VERSION);
        }
        if (hello.joinsStripe()) {
            if (stripeLoops.isEmpty()) {
                throw new VgpuException(
                        ErrorCode.VGPU_AUTH_FAILED, "worker " + config.workerId() + " takes no stripes");
            }
            StripedStreams stripes = stripeJoins
                    .find(hello.token())
                    .orElseThrow(() -> new VgpuException(
                            ErrorCode.VGPU_AUTH_FAILED,
                            "worker " + config.workerId() + " has no session with the stripe key presented"));
            ChannelPromise settled = channel.newPromise();
            stripes.attach(hello.stripeIndex(), channel, settled);
            return new Stripe(stripes, hello.stripeIndex(), settled);
        }
        authenticate(hello, channel);
        int key = served.claimKey(hello);
        Optional<LiveSession> claim = served.claim(key, channel);
        if (claim.isPresent()) {
            return new Session(hello, key, claim.get());
        }
        // a one-session worker keeps its ended session: nothing to wait for there
        Optional<LiveSession> leaving = served.holder(key)
                .filter(holder -> mayWait && sessions != GpuWorker.Sessions.ONE && holder.isLeaving());
        if (leaving.isPresent()) {
            return new AfterHolder(leaving.get());
        }
        throw new VgpuException(
                ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                "worker " + config.workerId() + " already serves a session"
                        + (sessions == GpuWorker.Sessions.ONE_PER_VGPU
                                ? " of vGPU " + key + ": one process at a time uses a vGPU"
                                : ""));
    }

    /**
     * Turns a signed-in connection into the stripe it joined: its bytes go to the stripes' own reader in place of the
     * frame decoder, which hands it what it buffered after the HELLO, and the connection moves from the loop that
     * accepted it onto the stripe's own ({@link #stripeLoops}), after which its chunks may be written. A stripe has
     * no idle timeout of its own: its session's connection has one, and a stripe quiet between copies is not idle.
     */
    void becomeStripe(ChannelHandlerContext ctx, Stripe stripe) {
        ChannelPipeline pipeline = ctx.pipeline();
        pipeline.remove(IdleStateHandler.class);
        pipeline.addAfter(
                pipeline.context(FrameDecoder.class).name(),
                "stripe",
                stripe.stripes().reader(stripe.index()));
        pipeline.remove(FrameDecoder.class);
        Channel channel = ctx.channel();
        EventLoop loop = stripeLoops.get(stripe.index() % stripeLoops.size());
        // Netty deregisters once the read under way is handled, so no handler runs on two threads at once
        channel.deregister().addListener(off -> {
            if (!off.isSuccess()) {
                stripe.settled().setFailure(off.cause());
                return;
            }
            loop.register(channel).addListener(on -> {
                if (on.isSuccess()) {
                    stripe.settled().setSuccess();
                } else {
                    stripe.settled().setFailure(on.cause());
                    channel.unsafe().closeForcibly();
                }
            });
        });
    }

    private void authenticate(Hello hello, Channel channel) {
        try {
            authenticator.authenticate(hello.token(), hello.window(), NettyTransport.peerUser(channel));
        } catch (VgpuException e) {
            throw e.code() == ErrorCode.VGPU_AUTH_FAILED
                    ? e
                    : new VgpuException(ErrorCode.VGPU_AUTH_FAILED, e.getMessage(), e);
        } catch (VgpuFailure e) {
            // The token's own words (AuthException) go to the client under the wire's one code for a refusal.
            throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, e.detail(), e);
        } catch (IOException | RuntimeException e) {
            throw new VgpuException(ErrorCode.VGPU_AUTH_FAILED, "the session token could not be checked", e);
        }
    }
}
