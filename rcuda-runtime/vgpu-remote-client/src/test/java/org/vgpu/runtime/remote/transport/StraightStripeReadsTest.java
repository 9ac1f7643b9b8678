package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.vgpu.runtime.remote.transport.StripeWire.chunk;
import static org.vgpu.runtime.remote.transport.StripeWire.header;
import static org.vgpu.runtime.remote.transport.StripeWire.trailer;

import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.VgpuException;

/**
 * A stripe over a real loopback socket whose channel reads through {@link ReadTargets} reads each chunk a lander
 * lands straight from the socket into the lander's room, after the chunk's header alone, rather than copying it there
 * out of Netty's buffers; its chunks arrive whole and in order all the same, and a room a closed stripe was filling
 * goes back to its lander.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StraightStripeReadsTest {
    private static final int LANDED_FROM = 1024;

    private final EventLoopGroup group = NettyTransport.newEventLoopGroup(2, "test-straight", 0);
    private final AtomicReference<VgpuException> failure = new AtomicReference<>();
    private final StripedStreams path = new StripedStreams(1, Duration.ofSeconds(20), failure::set);
    private final CountingLander lander = new CountingLander();
    private Channel server;
    private Channel client;

    @AfterEach
    void close() {
        path.close();
        if (client != null) {
            client.close().syncUninterruptibly();
        }
        if (server != null) {
            server.close().syncUninterruptibly();
        }
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    /** Connects a client to a server whose accepted channel is the path's stripe 0, reading through ReadTargets. */
    private void connect() {
        path.landIn(lander);
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        server = new ServerBootstrap()
                .group(group)
                .channel(NettyTransport.serverSocketChannel())
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel channel) {
                        channel.config().setRecvByteBufAllocator(new ReadTargets(NettyTransport.receiveBuffers()));
                        channel.pipeline().addLast(path.reader(0));
                        path.attach(0, channel);
                        accepted.complete(channel);
                    }
                })
                .bind(new InetSocketAddress("127.0.0.1", 0))
                .syncUninterruptibly()
                .channel();
        client = new Bootstrap()
                .group(group)
                .channel(NettyTransport.socketChannel())
                .handler(new ChannelInboundHandlerAdapter())
                .connect(server.localAddress())
                .syncUninterruptibly()
                .channel();
        accepted.join();
    }

    private static byte[] pattern(int length, int seed) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 31 + seed);
        }
        return bytes;
    }

    private byte[] take(int number, int length) {
        ByteBuf trailer = trailer(number, length);
        ByteBuf chunk = path.receive(trailer);
        trailer.release();
        byte[] bytes = new byte[chunk.readableBytes()];
        chunk.getBytes(chunk.readerIndex(), bytes);
        chunk.release();
        return bytes;
    }

    @Test
    void chunksAfterTheFirstAreReadStraightIntoTheirRoomAndArriveWholeInOrder() {
        connect();
        byte[] first = pattern(100 << 10, 1);
        client.writeAndFlush(chunk(0, first)).syncUninterruptibly();
        assertArrayEquals(first, take(0, first.length));

        // sizes around the read sizes Netty picks, a small chunk the lander does not land, one of 1 MiB
        int[] sizes = {64 << 10, (256 << 10) + 7, 100, LANDED_FROM, 1 << 20, (1 << 20) - 1, 5000, 300 << 10};
        for (int i = 0; i < sizes.length; i++) {
            client.write(chunk(i + 1, pattern(sizes[i], i + 2)));
        }
        client.flush();
        for (int i = 0; i < sizes.length; i++) {
            assertArrayEquals(pattern(sizes[i], i + 2), take(i + 1, sizes[i]), "chunk " + (i + 1));
        }
        assertNull(failure.get());
        int landed = 1 + sizes.length - 1; // all but the chunk of 100 bytes
        assertEquals(landed, lander.reserved.get(), "every chunk of 1 KiB or more had room set aside");
        assertTrue(
                lander.copied.get() <= 1,
                "only the first chunk may be copied out of Netty's buffers, " + lander.copied.get() + " were");
    }

    @Test
    void aRoomTheStripeWasFillingWhenItClosedGoesBackToTheLander() throws Exception {
        connect();
        byte[] first = pattern(8 << 10, 1);
        client.writeAndFlush(chunk(0, first)).syncUninterruptibly();
        assertArrayEquals(first, take(0, first.length));
        // a header and half the body, then the connection closes
        ByteBuf half = header(1, 64 << 10).writeBytes(pattern(32 << 10, 2));
        client.writeAndFlush(half).syncUninterruptibly();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (lander.reserved.get() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(2, lander.reserved.get(), "the second chunk got its room");
        client.close().syncUninterruptibly();
        while (lander.abandoned.get() < 1 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(1, lander.abandoned.get(), "the half-filled room was given back");
        assertEquals(1, lander.filled.get(), "only the whole chunk was handed on");
    }

    /** Lands chunks of {@value #LANDED_FROM} bytes and more in direct buffers, counting how each got there. */
    private static final class CountingLander implements StripedStreams.ChunkLander {
        final AtomicInteger reserved = new AtomicInteger();
        final AtomicInteger copied = new AtomicInteger();
        final AtomicInteger filled = new AtomicInteger();
        final AtomicInteger abandoned = new AtomicInteger();

        @Override
        public boolean lands(ChunkLabel label, int length) {
            return length >= LANDED_FROM;
        }

        @Override
        public StripedStreams.Room reserve(int stripe, ChunkLabel label, int length, Runnable roomAgain) {
            reserved.incrementAndGet();
            ByteBuf into = Unpooled.directBuffer(length, length);
            return new StripedStreams.Room() {
                @Override
                public MemorySegment memory() {
                    return MemorySegment.ofBuffer(into.nioBuffer(0, length));
                }

                @Override
                public ByteBuf filled() {
                    filled.incrementAndGet();
                    return into.writerIndex(length);
                }

                @Override
                public void abandon() {
                    abandoned.incrementAndGet();
                    into.release();
                }
            };
        }

        @Override
        public ByteBuf land(int stripe, ChunkLabel label, ByteBuf in, int length, Runnable roomAgain) {
            copied.incrementAndGet();
            return StripedStreams.ChunkLander.super.land(stripe, label, in, length, roomAgain);
        }
    }
}
