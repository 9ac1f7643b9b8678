package org.vgpu.runtime.remote.transport;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
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
    private static final boolean EPOLL = Epoll.isAvailable();

    private NettyTransport() {
    }

    /** "epoll", or "nio" with the reason epoll could not be used. */
    public static String describe() {
        return EPOLL ? "epoll" : "nio (native epoll unavailable: " + Epoll.unavailabilityCause() + ")";
    }

    /** An event loop group of {@code threads} daemon threads named {@code name}, so a forgotten client never blocks JVM exit. */
    public static EventLoopGroup newEventLoopGroup(int threads, String name) {
        IoHandlerFactory handlers = EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
        return new MultiThreadIoEventLoopGroup(threads, new DefaultThreadFactory(name, true), handlers);
    }

    public static Class<? extends SocketChannel> socketChannel() {
        return EPOLL ? EpollSocketChannel.class : NioSocketChannel.class;
    }

    public static Class<? extends ServerSocketChannel> serverSocketChannel() {
        return EPOLL ? EpollServerSocketChannel.class : NioServerSocketChannel.class;
    }
}
