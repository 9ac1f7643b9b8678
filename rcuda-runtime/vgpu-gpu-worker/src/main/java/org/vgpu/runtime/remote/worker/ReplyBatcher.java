package org.vgpu.runtime.remote.worker;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;

import org.vgpu.runtime.remote.protocol.ReplyEncoder;

/**
 * The replies of one session, gathered into one buffer while more requests are queued and handed
 * to the event loop with {@link Channel#writeAndFlush}, which alone touches the pipeline. GPU
 * thread only.
 */
final class ReplyBatcher {
    /** Gathered replies go out at this size even while requests keep coming. */
    private static final int REPLY_FLUSH_BYTES = 64 << 10;

    private final Channel channel;
    private final ReplyEncoder encoder = new ReplyEncoder();
    private ByteBuf pending;

    ReplyBatcher(Channel channel) {
        this.channel = channel;
    }

    /** The encoder, writing at the end of the gathered replies. */
    ReplyEncoder reply() {
        if (pending == null) {
            pending = channel.alloc().directBuffer(256);
        } else if (pending.readableBytes() >= REPLY_FLUSH_BYTES) {
            flush();
            pending = channel.alloc().directBuffer(256);
        }
        return encoder.wrap(pending);
    }

    /** Hands the gathered replies to the event loop: the queue ran dry, or a reply of its own (DATA) must follow them. */
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
