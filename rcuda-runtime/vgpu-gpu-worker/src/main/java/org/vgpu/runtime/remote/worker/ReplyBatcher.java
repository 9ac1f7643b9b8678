package org.vgpu.runtime.remote.worker;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;

import org.vgpu.runtime.remote.protocol.ReplyEncoder;

/**
 * The replies of one session, gathered into one buffer while more requests are queued and handed
 * to the event loop with {@link Channel#writeAndFlush}, which alone touches the pipeline. GPU
 * thread only.
 *
 * <p>In the program's own process ({@link #into}) there is no event loop to hand them to: they are encoded straight
 * into the bytes the library reads after its request returns, which saves a buffer and a pass through the pipeline
 * per request. A chunk of data written to the channel lands behind them there, in the order it was written.
 */
final class ReplyBatcher {
    /** Gathered replies go out at this size even while requests keep coming. */
    private static final int REPLY_FLUSH_BYTES = 64 << 10;

    private final Channel channel;
    /** Where replies are encoded directly, in the program's own process; null on a connection. */
    private final ByteBuf outbox;

    private final ReplyEncoder encoder = new ReplyEncoder();
    private ByteBuf pending;

    private ReplyBatcher(Channel channel, ByteBuf outbox) {
        this.channel = channel;
        this.outbox = outbox;
    }

    /** Replies gathered for {@code channel}'s event loop. */
    static ReplyBatcher toChannel(Channel channel) {
        return new ReplyBatcher(channel, null);
    }

    /** Replies encoded into {@code outbox}, the bytes the library reads; {@code channel} is closed at the end. */
    static ReplyBatcher into(ByteBuf outbox, Channel channel) {
        return new ReplyBatcher(channel, outbox);
    }

    /** The encoder, writing at the end of the gathered replies. */
    ReplyEncoder reply() {
        if (outbox != null) {
            return encoder.wrap(outbox);
        }
        if (pending == null) {
            pending = channel.alloc().directBuffer(256);
        } else if (pending.readableBytes() >= REPLY_FLUSH_BYTES) {
            flush();
            pending = channel.alloc().directBuffer(256);
        }
        return encoder.wrap(pending);
    }

    /**
     * Hands the gathered replies to the event loop: the queue ran dry, or a reply of its own (DATA) must follow them.
     * Replies encoded into an outbox are there already.
     */
    void flush() {
        ByteBuf gathered = pending;
        if (gathered != null) {
            pending = null;
            channel.writeAndFlush(gathered, channel.voidPromise());
        }
    }

    /** Sends what is gathered, then closes the connection. */
    void flushAndClose() {
        ByteBuf last = pending;
        pending = null;
        if (last != null && channel.isActive()) {
            channel.writeAndFlush(last).addListener(ChannelFutureListener.CLOSE);
        } else {
            if (last != null) {
                last.release();
            }
            channel.close();
        }
    }
}
