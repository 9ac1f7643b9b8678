package org.vgpu.common.line;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.Channels;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;

/**
 * A server for one-line requests, on TCP ({@code vgpu lender}'s control socket, the tracker's
 * socket) or on a UNIX domain socket (the migration agent's): one virtual thread per connection,
 * requests answered by a {@link LineService} in order. A connection costs bounded resources
 * whatever the peer sends: requests are cut at the service's byte limit, at most
 * {@link Limits#maxConnections()} connections are served at once, and one that sends no complete
 * request for {@link Limits#idleTimeout()} is closed.
 */
public final class LineServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LineServer.class);

    /**
     * @param name            names the server in thread names, logs and refusals ("lender control")
     * @param maxRequestBytes longer requests reach the service marked truncated
     */
    public record Limits(String name, int maxRequestBytes, int maxConnections, Duration idleTimeout) {
        public Limits {
            if (maxRequestBytes < 1 || maxConnections < 1 || idleTimeout.isNegative() || idleTimeout.isZero()) {
                throw new IllegalArgumentException("line server limits must be positive: " + maxRequestBytes
                        + " bytes, " + maxConnections + " connections, idle " + idleTimeout);
            }
        }
    }

    private final ServerSocketChannel server;
    private final Endpoint endpoint;
    private final Path socketFile;
    private final Limits limits;
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final Semaphore connectionSlots;
    private final Thread acceptor;

    private LineServer(
            ServerSocketChannel server, Endpoint endpoint, Path socketFile, Limits limits, LineService service) {
        this.server = server;
        this.endpoint = endpoint;
        this.socketFile = socketFile;
        this.limits = limits;
        this.connectionSlots = new Semaphore(limits.maxConnections());
        this.acceptor = Thread.ofPlatform()
                .name(threadName(limits) + "-accept")
                .daemon()
                .unstarted(() -> acceptLoop(service));
    }

    /**
     * Binds TCP address {@code listen} (port 0: any free port) and starts answering.
     *
     * @throws NetworkException CANNOT_LISTEN when the address cannot be bound
     */
    public static LineServer start(Endpoint listen, Limits limits, LineService service) {
        ServerSocketChannel channel = null;
        try {
            channel = ServerSocketChannel.open();
            channel.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            channel.bind(
                    new InetSocketAddress(InetAddress.getByName(listen.host()), listen.port()),
                    limits.maxConnections());
            int port = ((InetSocketAddress) channel.getLocalAddress()).getPort();
            return started(new LineServer(channel, new Endpoint(listen.host(), port), null, limits, service));
        } catch (IOException e) {
            closeQuietly(channel);
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN,
                    "cannot listen for " + limits.name() + " connections on " + listen + ": " + IoReasons.of(e),
                    e);
        }
    }

    /**
     * Binds a UNIX domain socket at {@code socketFile}, readable and writable by its owner only, and
     * starts answering. A socket file left by a dead server is replaced when its directory is this user's
     * alone; a live server's socket, a socket nobody answers on in a directory others can reach, or a file that is not
     * a socket, is never touched.
     *
     * @throws NetworkException CANNOT_LISTEN saying why (no such directory, path too long, another
     *         server listening there, not a socket)
     */
    public static LineServer startUnix(Path socketFile, Limits limits, LineService service) {
        ServerSocketChannel channel = null;
        try {
            removeStaleSocket(socketFile, limits);
            channel = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            channel.bind(UnixDomainSocketAddress.of(socketFile), limits.maxConnections());
            Files.setPosixFilePermissions(socketFile, PosixFilePermissions.fromString("rw-------"));
            return started(new LineServer(channel, null, socketFile, limits, service));
        } catch (IOException e) {
            closeQuietly(channel);
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN,
                    "the " + limits.name() + " cannot listen on " + socketFile + ": " + IoReasons.of(e),
                    e);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    private static LineServer started(LineServer server) {
        server.acceptor.start();
        return server;
    }

    /**
     * Only a socket nobody answers on, in a directory that is this user's alone, is replaced: there, nobody else can
     * have made it (the job's agent socket directory is such a one). A socket nobody answers on elsewhere may be
     * another program's between its restarts.
     */
    private static void removeStaleSocket(Path socketFile, Limits limits) throws IOException {
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(socketFile, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        } catch (java.nio.file.NoSuchFileException absent) {
            return;
        }
        if (!attributes.isOther()) {
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN,
                    "the " + limits.name() + " cannot listen on " + socketFile
                            + ": a file that is not a socket is there; remove it or choose another path");
        }
        try (SocketChannel _ = SocketChannel.open(UnixDomainSocketAddress.of(socketFile))) {
            throw new NetworkException(
                    NetworkException.Code.CANNOT_LISTEN, "another " + limits.name() + " listens on " + socketFile);
        } catch (IOException nobodyListens) {
            Path directory = socketFile.toAbsolutePath().getParent();
            if (!isThisUsersAlone(directory)) {
                throw new NetworkException(
                        NetworkException.Code.CANNOT_LISTEN,
                        "the " + limits.name() + " cannot listen on " + socketFile + ": a socket nobody answers on is"
                                + " there, but " + directory + " is not this user's alone (the job's agent socket"
                                + " directory is, mode 0700), so it may be another program's; nothing was deleted:"
                                + " remove it or choose another path");
            }
            Files.deleteIfExists(socketFile);
        }
    }

    /** A real directory (not a link) owned by the user this process runs as, with no rights for group or others. */
    private static boolean isThisUsersAlone(Path directory) throws IOException {
        PosixFileAttributes attributes =
                Files.readAttributes(directory, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
        UserPrincipal me = directory
                .getFileSystem()
                .getUserPrincipalLookupService()
                .lookupPrincipalByName(System.getProperty("user.name"));
        return attributes.isDirectory()
                && attributes.owner().equals(me)
                && attributes.permissions().stream()
                        .allMatch(permission -> permission.name().startsWith("OWNER_"));
    }

    /** The bound TCP address, with the actual port when port 0 was asked for. */
    public Endpoint endpoint() {
        if (endpoint == null) {
            throw new IllegalStateException(limits.name() + " listens on UNIX socket " + socketFile + ", not TCP");
        }
        return endpoint;
    }

    /** Stops accepting, closes every connection, waits for the accepting thread, removes a UNIX socket file. */
    @Override
    public void close() {
        closeQuietly(server);
        for (SocketChannel connection : connections) {
            closeQuietly(connection);
        }
        try {
            acceptor.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (socketFile != null) {
            try {
                Files.deleteIfExists(socketFile);
            } catch (IOException e) {
                LOG.warn("{}: cannot remove socket file {}: {}", limits.name(), socketFile, IoReasons.of(e));
            }
        }
    }

    private String where() {
        return endpoint != null ? endpoint.toString() : socketFile.toString();
    }

    private void acceptLoop(LineService service) {
        while (server.isOpen()) {
            SocketChannel connection;
            try {
                connection = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                if (server.isOpen()) {
                    LOG.warn("{} socket {}: accept failed: {}", limits.name(), where(), IoReasons.of(e));
                    pauseAfterAcceptFailure();
                }
                continue;
            }
            if (!connectionSlots.tryAcquire()) {
                refuse(connection);
                continue;
            }
            connections.add(connection);
            Thread.ofVirtual().name(threadName(limits) + "-connection").start(() -> {
                try {
                    serve(connection, service);
                } finally {
                    connections.remove(connection);
                    connectionSlots.release();
                }
            });
        }
    }

    private void serve(SocketChannel connection, LineService service) {
        try (connection;
                IdleCloser.Watch watch = IdleCloser.watch(connection, limits.idleTimeout())) {
            ConnectionInput in = new ConnectionInput(connection);
            BoundedLineReader requests = new BoundedLineReader(in, limits.maxRequestBytes());
            String localHost = localHost(connection);
            for (BoundedLineReader.Line request = requests.readLine(); request != null; request = requests.readLine()) {
                watch.busy();
                List<String> reply = service.answer(request, localHost);
                if (in.peerClosed()) {
                    service.peerLeftBeforeReply(reply);
                }
                StringBuilder replies = new StringBuilder();
                for (String line : reply) {
                    replies.append(line).append('\n');
                }
                write(connection, replies.toString());
                if (request.truncated() && service.closesAfterOverlongRequest()) {
                    return;
                }
                watch.idle();
            }
        } catch (AsynchronousCloseException e) {
            LOG.debug(
                    "{} connection closed after {} s without a request, or at shutdown",
                    limits.name(),
                    limits.idleTimeout().toSeconds());
        } catch (IOException e) {
            LOG.debug("{} connection ended: {}", limits.name(), IoReasons.of(e));
        }
    }

    /**
     * The connection's bytes for the line reader (a blocking read, as {@link Channels#newInputStream} gives), and,
     * without blocking, whether the peer has closed its side: a byte that arrived meanwhile is kept for the next read.
     */
    private static final class ConnectionInput extends InputStream {
        private final SocketChannel channel;
        private final ByteBuffer ahead = ByteBuffer.allocate(1).flip();

        ConnectionInput(SocketChannel channel) {
            this.channel = channel;
        }

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] bytes, int offset, int length) throws IOException {
            if (length == 0) {
                return 0;
            }
            if (ahead.hasRemaining()) {
                bytes[offset] = ahead.get();
                return 1;
            }
            return channel.read(ByteBuffer.wrap(bytes, offset, length));
        }

        boolean peerClosed() {
            if (ahead.hasRemaining()) {
                return false;
            }
            synchronized (channel.blockingLock()) {
                try {
                    channel.configureBlocking(false);
                    try {
                        ahead.clear();
                        return channel.read(ahead) < 0;
                    } finally {
                        ahead.flip();
                        channel.configureBlocking(true);
                    }
                } catch (IOException resetOrClosed) {
                    return true;
                }
            }
        }
    }

    private static String localHost(SocketChannel connection) throws IOException {
        SocketAddress local = connection.getLocalAddress();
        return local instanceof InetSocketAddress inet ? inet.getAddress().getHostAddress() : "localhost";
    }

    private static void write(SocketChannel connection, String text) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
        while (bytes.hasRemaining()) {
            connection.write(bytes);
        }
    }

    /** Failures such as running out of file descriptors repeat at once; a pause keeps the loop from spinning. */
    private static void pauseAfterAcceptFailure() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void refuse(SocketChannel connection) {
        try (connection) {
            write(
                    connection,
                    "error too many " + limits.name() + " connections (" + limits.maxConnections()
                            + "), try again later\n");
        } catch (IOException e) {
            LOG.debug("refused a {} connection: {}", limits.name(), IoReasons.of(e));
        }
    }

    private static String threadName(Limits limits) {
        return limits.name().replace(' ', '-');
    }

    private static void closeQuietly(AutoCloseable closeable) {
        if (closeable == null) {
            return;
        }
        try {
            closeable.close();
        } catch (Exception e) {
            LOG.debug("closing {}: {}", closeable, e.toString());
        }
    }
}
