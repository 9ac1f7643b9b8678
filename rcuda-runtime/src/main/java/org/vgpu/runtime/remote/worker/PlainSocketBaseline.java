package org.vgpu.runtime.remote.worker;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The transport floor a remote vGPU is measured against: plain blocking {@code java.net} sockets,
 * no Netty, no framing, between the same two processes (a worker started with
 * {@code --baseline-port} runs the {@link Server}; the benchmark client calls the measurements).
 *
 * <p>A connection's first byte picks the mode: {@code 'E'} echoes 64-byte messages back until the
 * client closes; {@code 'S'} (sink) reads an int64 count and that many bytes, then answers one
 * byte; {@code 'P'} (source) reads an int64 count and sends that many bytes. The server accepts
 * anyone and serves nothing but bytes it makes up or throws away; run it only for benchmarks.
 */
public final class PlainSocketBaseline {
    public static final int MESSAGE_BYTES = 64;
    private static final int BULK_BUFFER_BYTES = 1 << 20;

    private PlainSocketBaseline() {
    }

    /** The server side, on its own threads. */
    public static final class Server implements AutoCloseable {
        private final ServerSocket socket;
        private final Set<Socket> connections = ConcurrentHashMap.newKeySet();

        private Server(ServerSocket socket) {
            this.socket = socket;
            Thread acceptor = new Thread(this::accept, "vgpu-baseline-accept");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        /** Listens on {@code host:port} (port 0: any free port). */
        public static Server start(String host, int port) {
            try {
                return new Server(new ServerSocket(port, 16, InetAddress.getByName(host)));
            } catch (IOException e) {
                throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "the baseline server cannot listen on " + host + ":" + port + ": " + e.getMessage(), e);
            }
        }

        public int port() {
            return socket.getLocalPort();
        }

        private void accept() {
            while (!socket.isClosed()) {
                try {
                    Socket connection = socket.accept();
                    connections.add(connection);
                    Thread serving = new Thread(() -> serve(connection), "vgpu-baseline-serve");
                    serving.setDaemon(true);
                    serving.start();
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(Socket connection) {
            try (connection) {
                connection.setTcpNoDelay(true);
                DataInputStream in = new DataInputStream(connection.getInputStream());
                DataOutputStream out = new DataOutputStream(connection.getOutputStream());
                switch (in.readByte()) {
                    case 'E' -> echo(in, out);
                    case 'S' -> {
                        discard(in, in.readLong());
                        out.write(1);
                        out.flush();
                    }
                    case 'P' -> produce(out, in.readLong());
                    default -> { }
                }
            } catch (IOException ended) {
                // the client went away; nothing to serve any more
            } finally {
                connections.remove(connection);
            }
        }

        private static void echo(DataInputStream in, OutputStream out) throws IOException {
            byte[] message = new byte[MESSAGE_BYTES];
            while (true) {
                try {
                    in.readFully(message);
                } catch (EOFException done) {
                    return;
                }
                out.write(message);
                out.flush();
            }
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a listening socket fails only if it is already gone
            }
            for (Socket connection : connections) {
                try {
                    connection.close();
                } catch (IOException ignored) {
                    // as above
                }
            }
        }
    }

    /** Nanoseconds per 64-byte round trip, averaged over {@code iterations} after as many warm-up trips. */
    public static double roundTripNanos(String host, int port, int iterations) {
        try (Socket socket = connect(host, port, 'E')) {
            InputStream in = socket.getInputStream();
            OutputStream out = socket.getOutputStream();
            byte[] message = new byte[MESSAGE_BYTES];
            for (int i = 0; i < iterations; i++) {
                roundTrip(in, out, message);
            }
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                roundTrip(in, out, message);
            }
            return (double) (System.nanoTime() - start) / iterations;
        } catch (IOException e) {
            throw failed("round trip", host, port, e);
        }
    }

    /** Nanoseconds to send {@code bytes} to the server until it acknowledges them all. */
    public static long sendNanos(String host, int port, long bytes) {
        try (Socket socket = connect(host, port, 'S')) {
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            byte[] buffer = new byte[BULK_BUFFER_BYTES];
            long start = System.nanoTime();
            out.writeLong(bytes);
            for (long left = bytes; left > 0; ) {
                int length = (int) Math.min(buffer.length, left);
                out.write(buffer, 0, length);
                left -= length;
            }
            out.flush();
            if (socket.getInputStream().read() != 1) {
                throw new EOFException("the server did not acknowledge the bytes");
            }
            return System.nanoTime() - start;
        } catch (IOException e) {
            throw failed("send", host, port, e);
        }
    }

    /** Nanoseconds to receive {@code bytes} from the server, from asking to the last byte. */
    public static long receiveNanos(String host, int port, long bytes) {
        try (Socket socket = connect(host, port, 'P')) {
            DataOutputStream out = new DataOutputStream(socket.getOutputStream());
            DataInputStream in = new DataInputStream(socket.getInputStream());
            long start = System.nanoTime();
            out.writeLong(bytes);
            out.flush();
            discard(in, bytes);
            return System.nanoTime() - start;
        } catch (IOException e) {
            throw failed("receive", host, port, e);
        }
    }

    private static void roundTrip(InputStream in, OutputStream out, byte[] message) throws IOException {
        out.write(message);
        out.flush();
        for (int read = 0; read < message.length; ) {
            int n = in.read(message, read, message.length - read);
            if (n < 0) {
                throw new EOFException("the server closed the connection");
            }
            read += n;
        }
    }

    private static void discard(InputStream in, long bytes) throws IOException {
        byte[] buffer = new byte[BULK_BUFFER_BYTES];
        for (long left = bytes; left > 0; ) {
            int n = in.read(buffer, 0, (int) Math.min(buffer.length, left));
            if (n < 0) {
                throw new EOFException("the peer closed the connection with " + left + " bytes to go");
            }
            left -= n;
        }
    }

    private static void produce(OutputStream out, long bytes) throws IOException {
        byte[] buffer = new byte[BULK_BUFFER_BYTES];
        for (long left = bytes; left > 0; ) {
            int length = (int) Math.min(buffer.length, left);
            out.write(buffer, 0, length);
            left -= length;
        }
        out.flush();
    }

    private static Socket connect(String host, int port, char mode) throws IOException {
        Socket socket = new Socket(host, port);
        try {
            socket.setTcpNoDelay(true);
            socket.getOutputStream().write(mode);
            return socket;
        } catch (SocketException e) {
            socket.close();
            throw e;
        }
    }

    private static VgpuException failed(String what, String host, int port, IOException e) {
        return new VgpuException(ErrorCode.VGPU_WORKER_LOST, "baseline " + what + " with " + host + ":" + port
                + " failed: " + e.getMessage(), e);
    }
}
