package org.vgpu.runtime.remote.transport;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.util.ReferenceCountUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A loop that another thread keeps busy with tasks, as a worker's GPU thread keeps its event loop
 * busy with DATA writes, still reads what arrives on its socket.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReadBetweenTasksEventLoopTest {
    /** Tasks the producer keeps queued at most, as a worker keeps its staging slots in the socket. */
    private static final int QUEUED = 16;
    /**
     * Bytes sent one after the other, each to be read within a few tasks: Netty's own loop reads one
     * in time now and then, when the producer falls behind and its queue runs empty for a moment.
     */
    private static final int PROBES = 5;
    /** Netty's own loop reads again only when its queue runs empty, or after 64 tasks past its time limit. */
    private static final int NETTY_CHECK_INTERVAL = 64;
    /** CPU a task takes, as a socket write of a chunk does. */
    private static final long TASK_NANOS = 50_000;

    @Test
    void aLoopKeptBusyByTasksFromAnotherThreadReadsWithinAFewTasks() throws Exception {
        EventLoopGroup serverGroup = NettyTransport.newEventLoopGroup(1, "busy-loop-test", 0);
        EventLoopGroup clientGroup = NettyTransport.newEventLoopGroup(1, "busy-loop-client", 0);
        AtomicLong tasksRun = new AtomicLong();
        CompletableFuture<Channel> accepted = new CompletableFuture<>();
        BlockingQueue<Long> readAfterTasks = new LinkedBlockingQueue<>();
        AtomicBoolean producing = new AtomicBoolean(true);
        Thread producer = null;
        try {
            Channel server = new ServerBootstrap()
                    .group(serverGroup)
                    .channel(NettyTransport.serverSocketChannel())
                    .childHandler(new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelActive(ChannelHandlerContext ctx) {
                            accepted.complete(ctx.channel());
                            ctx.fireChannelActive();
                        }

                        @Override
                        public void channelRead(ChannelHandlerContext ctx, Object message) {
                            ReferenceCountUtil.release(message);
                            readAfterTasks.add(tasksRun.get());
                        }
                    })
                    .bind(InetAddress.getLoopbackAddress(), 0)
                    .sync()
                    .channel();
            Channel client = new Bootstrap()
                    .group(clientGroup)
                    .channel(NettyTransport.socketChannel())
                    .handler(new ChannelInboundHandlerAdapter())
                    .connect(server.localAddress())
                    .sync()
                    .channel();
            EventLoop busy = accepted.get(10, TimeUnit.SECONDS).eventLoop();

            Semaphore room = new Semaphore(QUEUED);
            producer = Thread.ofPlatform().name("busy-loop-producer").start(() -> {
                while (producing.get()) {
                    room.acquireUninterruptibly();
                    busy.execute(() -> {
                        long end = System.nanoTime() + TASK_NANOS;
                        while (System.nanoTime() < end) {
                            Thread.onSpinWait();
                        }
                        tasksRun.incrementAndGet();
                        room.release();
                    });
                }
            });
            while (tasksRun.get() < 4L * NETTY_CHECK_INTERVAL) {
                Thread.sleep(1);
            }

            for (int probe = 0; probe < PROBES; probe++) {
                client.writeAndFlush(Unpooled.wrappedBuffer(new byte[] {(byte) probe}))
                        .sync();
                long sent = tasksRun.get();
                Long read = readAfterTasks.poll(30, TimeUnit.SECONDS);
                assertNotNull(read, "byte " + probe + " was never read");
                assertTrue(
                        read - sent < NETTY_CHECK_INTERVAL,
                        "byte " + probe + " was read " + (read - sent) + " tasks after it was sent, with at most "
                                + QUEUED + " queued at a time");
            }
            client.close().sync();
            server.close().sync();
        } finally {
            producing.set(false);
            if (producer != null) {
                producer.join(10_000);
            }
            serverGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
            clientGroup.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }
}
