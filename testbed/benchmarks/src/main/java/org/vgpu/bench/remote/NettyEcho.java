package org.vgpu.bench.remote;

import java.net.InetSocketAddress;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;

import org.vgpu.common.error.NetworkException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * A rung between the plain socket and a remote vGPU: 64-byte round trips through Netty as the remote runtime runs
 * it, with none of the runtime. The client's caller thread hands each message to its event loop and waits for the
 * echo as a remote call waits for its reply (polling for {@link RemoteTuning#spinNanos}, then parked until the loop
 * wakes it); the server echoes on its event loop, where a GPU worker hands each request to its GPU thread and the
 * reply back. Both ends use {@link NettyTransport}'s event loops with the runtime's polling. So a remote call's round
 * trip less this one is what the runtime adds to Netty: the worker's GPU thread and the protocol.
 */
final class NettyEcho {
    private NettyEcho() {}

    /** Echoes whatever each connection sends, on one event loop; for benchmarks only. */
    static final class Server implements AutoCloseable {
        private final EventLoopGroup group;
        private final Channel listener;

        private Server(EventLoopGroup group, Channel listener) {
            this.group = group;
            this.listener = listener;
        }

        static Server start(String host) {
            EventLoopGroup group = NettyTransport.newEventLoopGroup(
                    1, "vgpu-bench-echo", RemoteTuning.current().spinNanos());
            try {
                Channel listener = new ServerBootstrap()
                        .group(group)
                        .channel(NettyTransport.serverSocketChannel())
                        .childOption(ChannelOption.TCP_NODELAY, true)
                        .childHandler(new ChannelInitializer<>() {
                            @Override
                            protected void initChannel(Channel channel) {
                                channel.pipeline().addLast(new ChannelInboundHandlerAdapter() {
                                    @Override
                                    public void channelRead(ChannelHandlerContext context, Object message) {
                                        context.writeAndFlush(message, context.voidPromise());
                                    }
                                });
                            }
                        })
                        .bind(host, 0)
                        .syncUninterruptibly()
                        .channel();
                return new Server(group, listener);
            } catch (RuntimeException e) {
                group.shutdownGracefully(0, 0, TimeUnit.SECONDS);
                throw new NetworkException(
                        NetworkException.Code.CANNOT_LISTEN,
                        "the Netty echo server cannot listen on " + host + ": " + e.getMessage(),
                        e);
            }
        }

        int port() {
            return ((InetSocketAddress) listener.localAddress()).getPort();
        }

        @Override
        public void close() {
            listener.close().syncUninterruptibly();
            group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** Counts the echoed bytes on the client's event loop and wakes the caller once a whole message is back. */
    private static final class Arrivals extends ChannelInboundHandlerAdapter {
        private final AtomicLong bytes = new AtomicLong();
        private volatile Thread waiter;

        @Override
        public void channelRead(ChannelHandlerContext context, Object message) {
            ByteBuf buffer = (ByteBuf) message;
            try {
                bytes.addAndGet(buffer.readableBytes());
            } finally {
                buffer.release();
            }
            Thread parked = waiter;
            if (parked != null) {
                LockSupport.unpark(parked);
            }
        }

        /** Waits until {@code total} bytes have come back, polling for {@code spinNanos} before parking. */
        void await(long total, long spinNanos, Channel channel) {
            long pollUntil = System.nanoTime() + spinNanos;
            while (bytes.get() < total) {
                if (System.nanoTime() < pollUntil) {
                    Thread.onSpinWait();
                    continue;
                }
                waiter = Thread.currentThread();
                if (bytes.get() < total) {
                    LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(10));
                }
                waiter = null;
                if (!channel.isActive() && bytes.get() < total) {
                    throw new NetworkException(
                            NetworkException.Code.UNREACHABLE, "the Netty echo server closed the connection");
                }
            }
        }
    }

    /**
     * Nanoseconds per 64-byte round trip through Netty, averaged over {@code iterations} after as many warm-up
     * trips, with a client event loop of {@code group}.
     */
    static double roundTripNanos(EventLoopGroup group, String host, int port, int iterations) {
        Arrivals arrivals = new Arrivals();
        Channel channel;
        try {
            channel = new Bootstrap()
                    .group(group)
                    .channel(NettyTransport.socketChannel())
                    .option(ChannelOption.TCP_NODELAY, true)
                    .handler(arrivals)
                    .connect(host, port)
                    .syncUninterruptibly()
                    .channel();
        } catch (RuntimeException e) {
            throw new NetworkException(
                    NetworkException.Code.UNREACHABLE,
                    "cannot reach the Netty echo server at " + host + ":" + port + ": " + e.getMessage(),
                    e);
        }
        long spinNanos = RemoteTuning.current().spinNanos();
        ByteBuf message =
                Unpooled.directBuffer(PlainSocketBaseline.MESSAGE_BYTES).writeZero(PlainSocketBaseline.MESSAGE_BYTES);
        try {
            long sent = 0;
            for (int i = 0; i < iterations; i++) {
                sent = trip(channel, message, arrivals, sent, spinNanos);
            }
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                sent = trip(channel, message, arrivals, sent, spinNanos);
            }
            return (double) (System.nanoTime() - start) / iterations;
        } finally {
            message.release();
            channel.close().syncUninterruptibly();
        }
    }

    private static long trip(Channel channel, ByteBuf message, Arrivals arrivals, long sent, long spinNanos) {
        channel.writeAndFlush(message.retainedDuplicate(), channel.voidPromise());
        long total = sent + message.readableBytes();
        arrivals.await(total, spinNanos, channel);
        return total;
    }
}
