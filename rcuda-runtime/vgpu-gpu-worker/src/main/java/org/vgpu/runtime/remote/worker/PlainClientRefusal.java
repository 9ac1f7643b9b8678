package org.vgpu.runtime.remote.worker;

import java.util.List;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.ssl.SslHandler;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;

/**
 * The first handler of a TLS worker's connection: a client that starts with a TLS record goes on to the TLS handler;
 * one that starts in plain TCP (a HELLO) is told, in plain TCP, that this worker speaks TLS only, and closed. So a
 * job whose token pins no certificate learns why its worker refuses it instead of seeing the connection drop; the
 * worker serves nobody without TLS either way.
 */
final class PlainClientRefusal extends ByteToMessageDecoder {
    /** A TLS record header: content type, version, length. */
    private static final int RECORD_HEADER_BYTES = 5;

    private final String workerId;
    private final Consumer<String> log;

    PlainClientRefusal(String workerId, Consumer<String> log) {
        this.workerId = workerId;
        this.log = log;
    }

    @Override
    protected void decode(ChannelHandlerContext ctx, ByteBuf in, List<Object> out) {
        if (in.readableBytes() < RECORD_HEADER_BYTES) {
            return;
        }
        if (SslHandler.isEncrypted(in, false)) {
            // the bytes read so far go on to the TLS handler
            ctx.pipeline().remove(this);
            return;
        }
        in.skipBytes(in.readableBytes());
        VgpuException refused = new VgpuException(
                ErrorCode.VGPU_AUTH_FAILED,
                "worker " + workerId + " speaks TLS only, and this client connected in plain TCP (its session token"
                        + " pins no certificate of this worker: was the token issued with [cluster] worker_tls = off?)");
        log.accept("worker " + workerId + ": refused " + ctx.channel().remoteAddress()
                + ": a client in plain TCP (this worker speaks TLS only)");
        ByteBuf error = ctx.alloc().buffer(256);
        new ReplyEncoder().wrap(error).error(0, refused);
        ctx.writeAndFlush(error).addListener(ChannelFutureListener.CLOSE);
    }
}
