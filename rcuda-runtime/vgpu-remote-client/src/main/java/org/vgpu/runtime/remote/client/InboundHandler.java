package org.vgpu.runtime.remote.client;

import java.util.function.Supplier;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.timeout.IdleStateEvent;

import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.protocol.ReplyVisitor;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.transport.BulkBytePath;

/**
 * The event loop's end of a connection: reads replies and completes the calls waiting for them
 * (device-to-host data goes straight into the caller's memory), answers idleness with keepalive,
 * and turns the connection's end or failure into its loss.
 */
final class InboundHandler extends ChannelInboundHandlerAdapter implements ReplyVisitor {
    private final WorkerHandshake handshake;
    private final WaitingCalls calls;
    private final Keepalive keepalive;
    private final ConnectionLoss loss;
    private final RequestBatcher batcher;
    private final RemoteTraffic traffic;
    private final Supplier<BulkBytePath> bulkPath;
    private ChannelHandlerContext ctx;
    /** The frame being dispatched: a DATA chunk's flags say where its bytes are. Event loop only. */
    private Frame reading;

    InboundHandler(
            WorkerHandshake handshake,
            WaitingCalls calls,
            Keepalive keepalive,
            ConnectionLoss loss,
            RequestBatcher batcher,
            RemoteTraffic traffic,
            Supplier<BulkBytePath> bulkPath) {
        this.handshake = handshake;
        this.calls = calls;
        this.keepalive = keepalive;
        this.loss = loss;
        this.batcher = batcher;
        this.traffic = traffic;
        this.bulkPath = bulkPath;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext context) {
        ctx = context;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        keepalive.frameRead();
        Frame frame = (Frame) msg;
        traffic.received(Frames.HEADER_BYTES + (long) frame.content().readableBytes());
        reading = frame;
        try {
            ReplyDecoder.dispatch(frame, this);
        } finally {
            reading = null;
            frame.release();
        }
    }

    @Override
    public void welcome(int requestId, Welcome welcome) {
        handshake.welcomed(welcome);
    }

    @Override
    public void pong(int requestId) {
        // reading it was the point
    }

    @Override
    public void ok(int requestId, ByteBuf result) {
        calls.succeed(requestId, result);
    }

    @Override
    public void error(int requestId, VgpuException failure) {
        if (requestId == 0 || !handshake.isDone()) {
            if (!handshake.isDone()) {
                handshake.refused();
            }
            lose(loss.sessionRefused(failure, handshake.isDone()));
            ctx.close();
            return;
        }
        calls.fail(requestId, failure);
    }

    @Override
    public void data(int requestId, boolean more, boolean failureKept, long offset, ByteBuf trailer) {
        ByteBuf chunk = bulkPath.get().chunkOf(reading, trailer);
        try {
            if (reading.inSlot()) {
                traffic.received(chunk.readableBytes());
            }
            calls.data(requestId, more, failureKept, offset, chunk);
        } finally {
            chunk.release();
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        lose(loss.connectionClosed());
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        VgpuException failure = loss.ofPipelineException(cause);
        if (failure != null) {
            lose(failure);
        }
        ctx.close();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
        if (!(event instanceof IdleStateEvent)) {
            ctx.fireUserEventTriggered(event);
            return;
        }
        VgpuException expired = keepalive.onIdle(ctx, loss);
        if (expired != null) {
            lose(expired);
            ctx.close();
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (ctx.channel().isWritable()) {
            batcher.wakeWriter();
        }
        ctx.fireChannelWritabilityChanged();
    }

    /** The first loss wins; the handshake, every waiting call and a writer waiting for the channel fail with it. */
    private void lose(VgpuException failure) {
        VgpuException lost = loss.lose(failure);
        handshake.fail(lost);
        calls.failAll(lost);
        batcher.wakeWriter();
    }
}
