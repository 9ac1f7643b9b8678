package org.vgpu.runtime.remote.transport;

import java.nio.channels.spi.SelectorProvider;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;

import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.ChannelOption;
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

/**
 * The Netty transport both ends of a remote vGPU use: the native epoll transport where it loads
 * (Linux x86-64: fewer copies and syscalls than NIO), NIO elsewhere. Decided once per process.
 */
public final class NettyTransport {
    /** System property overriding {@link #DEFAULT_SPIN_NANOS}, in microseconds; 0 turns polling off. */
    public static final String SPIN_PROPERTY = "vgpu.spin.micros";
    /**
     * How long threads of a session poll for their next piece of work before they sleep: the app
     * thread waiting for a reply, both event loops, the worker's GPU thread. Polling pays only where
     * cores are plentiful (a busy session keeps up to four threads running); on a small machine they
     * would take the CPU from each other, so there the default is 0.
     */
    public static final long DEFAULT_SPIN_NANOS = Long.getLong(SPIN_PROPERTY,
            Runtime.getRuntime().availableProcessors() >= 8 ? 50 : 0) * 1000;

    /**
     * System property: SO_RCVBUF and SO_SNDBUF of session connections in KiB, on whichever end it is
     * set (both, through JAVA_TOOL_OPTIONS); unset leaves them to the kernel's autotuning, which
     * usually grows them further than a fixed size would. A knob for measuring bulk copies.
     */
    public static final String SOCKET_BUFFER_PROPERTY = "vgpu.socket.buffer.kib";
    private static final int SOCKET_BUFFER_BYTES = Integer.getInteger(SOCKET_BUFFER_PROPERTY, 0) << 10;

    private static final boolean EPOLL = Epoll.isAvailable();

    private NettyTransport() {
    }

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

    /** The socket buffer size {@link #SOCKET_BUFFER_PROPERTY} asks for in bytes, 0 where it is unset (kernel autotuning). */
    public static int socketBufferBytes() {
        return SOCKET_BUFFER_BYTES;
    }

    /** Passes the socket buffer sizes {@link #SOCKET_BUFFER_PROPERTY} asks for to {@code option}, if any. */
    public static void socketBuffers(BiConsumer<ChannelOption<Integer>, Integer> option) {
        if (SOCKET_BUFFER_BYTES > 0) {
            option.accept(ChannelOption.SO_RCVBUF, SOCKET_BUFFER_BYTES);
            option.accept(ChannelOption.SO_SNDBUF, SOCKET_BUFFER_BYTES);
        }
    }

    public static Class<? extends SocketChannel> socketChannel() {
        return EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    public static Class<? extends ServerSocketChannel> serverSocketChannel() {
        return EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }
}
