package org.vgpu.runtime.remote.lender;

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

/**
 * The lender's TCP control socket: one virtual thread per connection, requests answered by
 * {@link ControlProtocol} in order. A connection costs bounded resources whatever the peer sends:
 * requests are cut at {@value #MAX_REQUEST_BYTES} bytes, at most {@value #MAX_CONNECTIONS}
 * connections are served at once, and one that stays silent for {@link #IDLE_TIMEOUT} is closed.
 */
final class ControlServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ControlServer.class);
    static final int MAX_REQUEST_BYTES = 256;
    static final int MAX_CONNECTIONS = 32;
    static final Duration IDLE_TIMEOUT = Duration.ofMinutes(5);

    private final ServerSocket serverSocket;
    private final Endpoint endpoint;
    private final Set<Socket> connections = ConcurrentHashMap.newKeySet();
    private final Semaphore connectionSlots = new Semaphore(MAX_CONNECTIONS);
    private final Thread acceptor;

    private ControlServer(ServerSocket serverSocket, Endpoint endpoint, ControlProtocol protocol) {
        this.serverSocket = serverSocket;
        this.endpoint = endpoint;
        this.acceptor = Thread.ofPlatform().name("lender-control-accept").daemon().unstarted(() -> acceptLoop(protocol));
    }

    /**
     * Binds {@code listen} (port 0: any free port) and starts answering.
     *
     * @throws VgpuException CUDA_ERROR_INVALID_VALUE when the address cannot be bound
     */
    static ControlServer start(Endpoint listen, ControlProtocol protocol) {
        ServerSocket serverSocket = null;
        try {
            serverSocket = new ServerSocket();
            serverSocket.setReuseAddress(true);
            serverSocket.bind(new InetSocketAddress(InetAddress.getByName(listen.host()), listen.port()), MAX_CONNECTIONS);
        } catch (IOException e) {
            closeQuietly(serverSocket);
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    "cannot listen for control connections on " + listen + ": " + e.getMessage(), e);
        }
        ControlServer server = new ControlServer(serverSocket, new Endpoint(listen.host(), serverSocket.getLocalPort()), protocol);
        server.acceptor.start();
        return server;
    }

    /** The bound address, with the actual port when port 0 was asked for. */
    Endpoint endpoint() {
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

    private void acceptLoop(ControlProtocol protocol) {
        while (!serverSocket.isClosed()) {
            Socket connection;
            try {
                connection = serverSocket.accept();
            } catch (IOException e) {
                if (!serverSocket.isClosed()) {
                    LOG.warn("control socket {}: accept failed: {}", endpoint, e.toString());
                    pauseAfterAcceptFailure();
                }
                continue;
            }
            if (!connectionSlots.tryAcquire()) {
                refuse(connection);
                continue;
            }
            connections.add(connection);
            Thread.ofVirtual().name("lender-control-" + connection.getRemoteSocketAddress()).start(() -> {
                try {
                    serve(connection, protocol);
                } finally {
                    connections.remove(connection);
                    connectionSlots.release();
                }
            });
        }
    }

    private void serve(Socket connection, ControlProtocol protocol) {
        try (connection) {
            connection.setSoTimeout((int) IDLE_TIMEOUT.toMillis());
            BoundedLineReader requests = new BoundedLineReader(connection.getInputStream(), MAX_REQUEST_BYTES);
            Writer replies = new BufferedWriter(new OutputStreamWriter(connection.getOutputStream(), StandardCharsets.US_ASCII));
            String localHost = connection.getLocalAddress().getHostAddress();
            for (BoundedLineReader.Line request = requests.readLine(); request != null; request = requests.readLine()) {
                for (String reply : protocol.answer(request, localHost)) {
                    replies.write(reply);
                    replies.write('\n');
                }
                replies.flush();
            }
        } catch (SocketTimeoutException e) {
            LOG.debug("control connection from {} idle for {} s, closed", connection.getRemoteSocketAddress(),
                    IDLE_TIMEOUT.toSeconds());
        } catch (IOException e) {
            LOG.debug("control connection from {} ended: {}", connection.getRemoteSocketAddress(), e.toString());
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

    private static void refuse(Socket connection) {
        try (connection) {
            connection.getOutputStream().write(("error too many control connections (" + MAX_CONNECTIONS
                    + "), try again later\n").getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
            LOG.debug("refused control connection from {}: {}", connection.getRemoteSocketAddress(), e.toString());
        }
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
