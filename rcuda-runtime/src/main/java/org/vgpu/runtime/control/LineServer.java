package org.vgpu.runtime.control;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.lender.Endpoint;

/**
 * A TCP server for one-line requests ({@code vgpu lender}'s control socket, the tracker's socket):
 * one virtual thread per connection, requests answered by a {@link LineService} in order. A
 * connection costs bounded resources whatever the peer sends: requests are cut at the service's
 * byte limit, at most {@link Limits#maxConnections()} connections are served at once, and one that
 * stays silent for {@link Limits#idleTimeout()} is closed.
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
                throw new IllegalArgumentException("line server limits must be positive: " + maxRequestBytes + " bytes, "
                        + maxConnections + " connections, idle " + idleTimeout);
            }
        }
    }

    private final ServerSocket serverSocket;
    private final Endpoint endpoint;
    private final Limits limits;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Semaphore connectionSlots;
    private final Thread acceptor;

    private LineServer(ServerSocket serverSocket, Endpoint endpoint, Limits limits, LineService service) {
        this.serverSocket = serverSocket;
        this.endpoint = endpoint;
        this.limits = limits;
        this.connectionSlots = new Semaphore(limits.maxConnections());
        this.acceptor = Thread.ofPlatform().name(threadName(limits) + "-accept").daemon().unstarted(() -> acceptLoop(service));
    }

    /**
     * Binds {@code listen} (port 0: any free port) and starts answering.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE when the address cannot be bound
     */
    public static LineServer start(Endpoint listen, Limits limits, LineService service) {
        ServerSocket serverSocket = null;
        try {
            serverSocket = new ServerSocket();
            serverSocket.setReuseAddress(true);
            serverSocket.bind(new InetSocketAddress(InetAddress.getByName(listen.host()), listen.port()), limits.maxConnections());
        } catch (IOException e) {
            closeQuietly(serverSocket);
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "cannot listen for " + limits.name() + " connections on " + listen + ": " + e.getMessage(), e);
        }
        LineServer server = new LineServer(serverSocket, new Endpoint(listen.host(), serverSocket.getLocalPort()), limits, service);
        server.acceptor.start();
        return server;
    }

    /** The bound address, with the actual port when port 0 was asked for. */
    public Endpoint endpoint() {
        return endpoint;
    }

    /** Stops accepting, closes every connection and waits for the accepting thread. */
    @Override
    public void close() {
        closeQuietly(serverSocket);
        for (Socket connection : connections) {
            closeQuietly(connection);
        }
        try {
            acceptor.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void acceptLoop(LineService service) {
        while (!serverSocket.isClosed()) {
            Socket connection;
            try {
                connection = serverSocket.accept();
            } catch (IOException e) {
                if (!serverSocket.isClosed()) {
                    LOG.warn("{} socket {}: accept failed: {}", limits.name(), endpoint, e.toString());
                    pauseAfterAcceptFailure();
                }
                continue;
            }
            if (!connectionSlots.tryAcquire()) {
                refuse(connection);
                continue;
            }
            connections.add(connection);
            Thread.ofVirtual().name(threadName(limits) + "-" + connection.getRemoteSocketAddress()).start(() -> {
                try {
                    serve(connection, service);
                } finally {
                    connections.remove(connection);
                    connectionSlots.release();
                }
            });
        }
    }

    private void serve(Socket connection, LineService service) {
        try (connection) {
            connection.setSoTimeout((int) limits.idleTimeout().toMillis());
            BoundedLineReader requests = new BoundedLineReader(connection.getInputStream(), limits.maxRequestBytes());
            Writer replies = new BufferedWriter(new OutputStreamWriter(connection.getOutputStream(), StandardCharsets.US_ASCII));
            String localHost = connection.getLocalAddress().getHostAddress();
            for (BoundedLineReader.Line request = requests.readLine(); request != null; request = requests.readLine()) {
                for (String reply : service.answer(request, localHost)) {
                    replies.write(reply);
                    replies.write('\n');
                }
                replies.flush();
            }
        } catch (SocketTimeoutException e) {
            LOG.debug("{} connection from {} idle for {} s, closed", limits.name(), connection.getRemoteSocketAddress(),
                    limits.idleTimeout().toSeconds());
        } catch (IOException e) {
            LOG.debug("{} connection from {} ended: {}", limits.name(), connection.getRemoteSocketAddress(), e.toString());
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

    private void refuse(Socket connection) {
        try (connection) {
            connection.getOutputStream().write(("error too many " + limits.name() + " connections (" + limits.maxConnections()
                    + "), try again later\n").getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            LOG.debug("refused {} connection from {}: {}", limits.name(), connection.getRemoteSocketAddress(), e.toString());
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
