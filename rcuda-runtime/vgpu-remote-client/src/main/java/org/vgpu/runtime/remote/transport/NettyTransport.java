package org.vgpu.runtime.remote.transport;

import java.io.IOException;
import java.net.SocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.spi.SelectorProvider;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.Executor;
import java.util.function.BiConsumer;

import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelOption;
import io.netty.channel.DefaultSelectStrategyFactory;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.IoEventLoop;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.SelectStrategyFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.ServerSocketChannel;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioChannelOption;
import io.netty.channel.socket.nio.NioDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import io.netty.util.concurrent.DefaultThreadFactory;
import jdk.net.ExtendedSocketOptions;
import jdk.net.UnixDomainPrincipal;

import org.vgpu.runtime.remote.RemoteTuning;

/**
 * The Netty transport both ends of a remote vGPU use: the native epoll transport where it loads
 * (Linux x86-64: fewer copies and syscalls than NIO), NIO elsewhere. Decided once per process. Both
 * carry the protocol over TCP and over Unix domain sockets (a launcher's local worker): epoll's own domain
 * sockets, or NIO's, which are the JDK's {@link UnixDomainSocketAddress} channels.
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

    /**
     * The receive buffers of a session's connections, both ends: small reads for the requests and replies of calls,
     * growing to 1 MiB (a chunk) while bulk bytes stream in.
     */
    public static AdaptiveRecvByteBufAllocator receiveBuffers() {
        return new AdaptiveRecvByteBufAllocator(512, 16 << 10, 1 << 20);
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

    public static Class<? extends Channel> domainSocketChannel() {
        return EPOLL ? EpollDomainSocketChannel.class : NioDomainSocketChannel.class;
    }

    public static Class<? extends ServerChannel> serverDomainSocketChannel() {
        return EPOLL ? EpollServerDomainSocketChannel.class : NioServerDomainSocketChannel.class;
    }

    /** The address of the Unix domain socket at {@code path}, as the transport's domain channels take it. */
    public static SocketAddress domainSocketAddress(Path path) {
        return EPOLL ? new DomainSocketAddress(path.toFile()) : UnixDomainSocketAddress.of(path);
    }

    /**
     * The user of the process at the other end of a Unix domain socket, as the kernel recorded it when the peer
     * connected (SO_PEERCRED); empty for a channel of another kind.
     *
     * @throws IOException when the kernel cannot be asked
     */
    public static Optional<PeerUser> peerUser(Channel channel) throws IOException {
        return switch (channel) {
            case EpollDomainSocketChannel epoll ->
                Optional.of(PeerUser.ofUid(epoll.peerCredentials().uid()));
            case NioDomainSocketChannel nio -> {
                UnixDomainPrincipal principal =
                        nio.config().getOption(NioChannelOption.of(ExtendedSocketOptions.SO_PEERCRED));
                yield Optional.of(PeerUser.ofPrincipal(principal.user()));
            }
            default -> Optional.empty();
        };
    }
}
