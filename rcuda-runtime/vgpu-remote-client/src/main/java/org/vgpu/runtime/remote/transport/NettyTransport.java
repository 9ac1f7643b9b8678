package org.vgpu.runtime.remote.transport;

import java.nio.channels.spi.SelectorProvider;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;

import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.concurrent.DefaultThreadFactory;

import org.vgpu.runtime.remote.RemoteTuning;

/**
 * The Netty transport both ends of a remote vGPU use: the native epoll transport where it loads
 * (Linux x86-64: fewer copies and syscalls than NIO), NIO elsewhere. Decided once per process.
 */
public final class NettyTransport {
    private static final boolean EPOLL = Epoll.isAvailable();

    private NettyTransport() {}

    /** "epoll", or "nio" with the reason epoll could not be used. */
    public static String describe() {
        return EPOLL ? "epoll" : "nio (native epoll unavailable: " + Epoll.unavailabilityCause() + ")";
    }

    /**
     * An event loop group of {@code threads} daemon threads named {@code name}, so a forgotten
     * client never blocks JVM exit. Its loops poll their sockets between the writes other threads
     * hand them ({@link ReadBetweenTasksEventLoop}).
     *
     * @param spinNanos how long a loop keeps polling after it last had work before it sleeps; 0 never polls
     */
    public static EventLoopGroup newEventLoopGroup(int threads, String name, long spinNanos) {
        SelectStrategyFactory strategy = spinNanos > 0
                ? () -> new SpinThenSleepSelectStrategy(spinNanos)
                : DefaultSelectStrategyFactory.INSTANCE;
        IoHandlerFactory handlers = EPOLL
                ? EpollIoHandler.newFactory(0, strategy)
                : NioIoHandler.newFactory(SelectorProvider.provider(), strategy);
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), handlers) {
            @Override
            protected IoEventLoop newChild(Executor executor, IoHandlerFactory loopHandlers, Object... args) {
                return new ReadBetweenTasksEventLoop(this, executor, loopHandlers);
            }
        };
    }

    /** The socket buffer size {@link RemoteTuning#socketBufferBytes} asks for in bytes, 0 where it is unset (kernel autotuning). */
    public static int socketBufferBytes() {
        return RemoteTuning.current().socketBufferBytes();
    }

    /** Passes the socket buffer sizes {@link RemoteTuning#socketBufferBytes} asks for to {@code option}, if any. */
    public static void socketBuffers(BiConsumer<ChannelOption<Integer>, Integer> option) {
        int bytes = socketBufferBytes();
        if (bytes > 0) {
            option.accept(ChannelOption.SO_RCVBUF, bytes);
            option.accept(ChannelOption.SO_SNDBUF, bytes);
        }
    }

    public static Class<? extends SocketChannel> socketChannel() {
        return EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    public static Class<? extends ServerSocketChannel> serverSocketChannel() {
        return EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }
}
