package org.vgpu.runtime.remote.worker;

import java.io.IOException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import javax.net.ssl.SSLException;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderException;
import io.netty.handler.timeout.IdleStateEvent;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.security.TlsFailures;
import org.vgpu.runtime.remote.worker.ServedSessions.LiveSession;

/**
 * One connection a worker accepted, on the worker's event loop: counted against the worker's limits and given the
 * sign-in bound; its first frame opens a session, joins a stripe ({@link SessionOpening}) or waits for the session
 * before it on its vGPU to end; after that it answers keepalives itself and queues everything else to the session's
 * GPU thread.
 */
final class AcceptedConnection extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(AcceptedConnection.class);

    /** What every connection of one worker shares. */
    record Context(
            WorkerConfig config,
            GpuBackend backend,
            Consumer<String> log,
            SessionOpening opening,
            StripeJoins stripeJoins,
            SharedHostRegions hostRegions,
            ConnectionLimits limits,
            SessionEnd sessionEnded) {}

    /** Told when a session is over and its vGPU freed. */
    @FunctionalInterface
    interface SessionEnd {
        void ended(int key, LiveSession claim, WorkerReport report);
    }

    private final WorkerConfig config;
    private final Consumer<String> log;
    private final Context worker;
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

    AcceptedConnection(TrafficCounter traffic, Context worker) {
        this.traffic = traffic;
        this.worker = worker;
        this.config = worker.config();
        this.log = worker.log();
    }

    /** Counts the connection, or refuses it when the worker holds as many as it keeps. */
    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        signingIn = true;
        Optional<VgpuException> refused = worker.limits().admit();
        if (refused.isPresent()) {
            log.accept("worker " + config.workerId() + ": refused "
                    + ctx.channel().remoteAddress() + ": " + refused.get().getMessage());
            overLimit = true;
            replyAndClose(ctx, 0, refused.get());
        } else {
            Duration bound = ConnectionLimits.signInBound(config);
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
        worker.limits().signedIn();
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
            opened = worker.opening().open(frame, ctx.channel(), mayWait);
        } catch (VgpuException refused) {
            refuse(ctx, frame, refused);
            return;
        }
        switch (opened) {
            case SessionOpening.AfterHolder after -> awaitHolder(ctx, frame, after.holder());
            case SessionOpening.Stripe stripe -> {
                signedIn(ctx);
                worker.opening().becomeStripe(ctx, stripe);
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
        log.accept("worker " + config.workerId() + ": refused " + ctx.channel().remoteAddress() + ": "
                + refused.getMessage());
        replyAndClose(ctx, requestId, refused);
    }

    private void startSession(ChannelHandlerContext ctx, SessionOpening.Session opens, Frame hello) {
        log.accept("worker " + config.workerId() + ": session for "
                + opens.hello().window() + " from " + ctx.channel().remoteAddress());
        claim = opens.claim();
        session = new SessionExecutor(
                ReplyBatcher.toChannel(ctx.channel()),
                ctx.channel(),
                worker.backend(),
                config,
                traffic,
                worker.stripeJoins(),
                worker.hostRegions());
        session.outcome()
                .thenAccept(outcome -> ctx.channel()
                        .closeFuture()
                        .addListener(closed -> worker.sessionEnded()
                                .ended(
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
        worker.limits().closed();
        if (signInDeadline != null) {
            signInDeadline.cancel(false);
        }
        if (signingIn) {
            signingIn = false;
            worker.limits().signedIn();
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
        Throwable failure = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
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
