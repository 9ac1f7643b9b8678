package org.vgpu.runtime.remote.worker;

import java.util.concurrent.atomic.AtomicLong;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelDuplexHandler;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelPromise;

/**
 * Counts the bytes a connection reads and writes, at the socket end of its pipeline, and those its session moves
 * through shared slots instead.
 */
@ChannelHandler.Sharable
final class TrafficCounter extends ChannelDuplexHandler {
    private final AtomicLong bytesIn = new AtomicLong();
    private final AtomicLong bytesOut = new AtomicLong();

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (msg instanceof ByteBuf buf) {
            bytesIn.addAndGet(buf.readableBytes());
        }
        ctx.fireChannelRead(msg);
    }

    @Override
    public void write(ChannelHandlerContext ctx, Object msg, ChannelPromise promise) {
        if (msg instanceof ByteBuf buf) {
            bytesOut.addAndGet(buf.readableBytes());
        }
        ctx.write(msg, promise);
    }

    /**
     * Bytes of the session that moved outside the socket, through a slot shared with a client on this host: counted
     * as read, so what the worker says it served does not depend on the path the bytes took.
     */
    void sharedIn(long bytes) {
        bytesIn.addAndGet(bytes);
    }

    /** As {@link #sharedIn}, for bytes the worker wrote into a shared slot. */
    void sharedOut(long bytes) {
        bytesOut.addAndGet(bytes);
    }

    long bytesIn() {
        return bytesIn.get();
    }

    long bytesOut() {
        return bytesOut.get();
    }
}
