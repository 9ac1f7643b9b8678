package org.vgpu.runtime.remote.client;

import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.timeout.IdleStateHandler;

import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.RequestEncoder;

/**
 * Keepalive of one connection: asks the worker for a pong whenever nothing was read or written for
 * a third of the worker's idle timeout; a worker silent for the whole timeout is lost (it answers
 * keepalives even while a long kernel runs).
 */
final class Keepalive {
    /** Id of keepalive pings, which no call waits for. */
    private static final int PING_ID = 0;

    private volatile long idleTimeoutNanos = Long.MAX_VALUE;
    private volatile long lastReadNanos = System.nanoTime();

    /** Starts pinging {@code channel} by the idle timeout the worker's WELCOME named. */
    void start(Channel channel, long idleMillis) {
        idleTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(idleMillis);
        long keepaliveMillis = Math.max(1, idleMillis / 3);
        channel.eventLoop()
                .execute(() -> channel.pipeline()
                        .addBefore(
                                channel.pipeline().context(InboundHandler.class).name(),
                                "keepalive",
                                new IdleStateHandler(keepaliveMillis, keepaliveMillis, 0, TimeUnit.MILLISECONDS)));
    }

    /** A frame arrived. Event loop. */
    void frameRead() {
        lastReadNanos = System.nanoTime();
    }

    /**
     * The channel was idle for a third of the timeout: pings the worker, or, where it has been
     * silent for the whole timeout, says so. Event loop.
     *
     * @return the connection's loss, or null where it pinged
     */
    VgpuException onIdle(ChannelHandlerContext ctx, ConnectionLoss loss) {
        long silentNanos = System.nanoTime() - lastReadNanos;
        if (silentNanos >= idleTimeoutNanos) {
            return loss.keepaliveExpired(TimeUnit.NANOSECONDS.toMillis(silentNanos));
        }
        ByteBuf ping = ctx.alloc().buffer(Frames.HEADER_BYTES);
        new RequestEncoder().wrap(ping).ping(PING_ID);
        ctx.writeAndFlush(ping, ctx.voidPromise());
        return null;
    }
}
