package org.vgpu.bench.remote;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * The transport floor a remote vGPU is measured against: plain blocking sockets, no Netty, no
 * framing, between two processes of the same machines as the remote vGPU's (a {@link PlainSocketPeer}
 * process runs the {@link Server}; the benchmark client calls the measurements).
 *
 * <p>Bulk transfers come in two kinds. Through a cached buffer: both ends move the bytes through
 * one reused {@value #CACHED_BUFFER_BYTES}-byte heap array, which stays in the CPU caches, so the
 * figure is the network stack alone and flatters the socket. From and into host memory: the
 * sender writes from, and the receiver reads into, native memory of the whole transfer's size, in
 * slices, as a remote copy reads the caller's whole host buffer (host-to-device) or writes it
 * (device-to-host); the fair floor for a bulk copy. Both kinds share the same connection, header,
 * acknowledgement and slice loop; they differ only in where each slice lives.
 *
 * <p>A connection's first byte picks the mode: {@code 'E'} echoes 64-byte messages back until the
 * client closes, waiting for each in a blocking read; {@code 'F'} does the same retrying a non-blocking read, so that
 * neither end sleeps in the kernel (the spinning floor); {@code 'S'} (sink) reads an int64 count and that many bytes through the cached
 * buffer, then answers one byte; {@code 'P'} (source) reads an int64 count and sends that many
 * bytes through the cached buffer; {@code 'W'} and {@code 'R'} are {@code 'S'} and {@code 'P'}
 * into and from the server's own native memory of the count's size, one of {@value #PARALLEL_STREAMS} regions named
 * by a byte between the mode and the count (kept between connections, filled with {@link #fillPattern the pattern}
 * once), so that parallel connections each have their own. A server started {@link Server#verifying
 * verifying} checks that what {@code 'W'} received is the pattern and answers {@code 2} where it
 * is not (for tests: the check runs before the acknowledgement, inside the client's timing, so
 * never time a verifying server). The server accepts anyone and serves
 * nothing but bytes it makes up or throws away; run it only for benchmarks. Socket buffers follow
 * {@link NettyTransport#socketBufferBytes} as the remote runtime's do.
 */
public final class PlainSocketBaseline {
    public static final int MESSAGE_BYTES = 64;
    /** The size of the cached buffer, and of each slice of a transfer from or into host memory. */
    public static final int CACHED_BUFFER_BYTES = 1 << 20;
    /** The largest transfer from or into the server's memory it allocates for. */
    public static final long MAX_MEMORY_BYTES = 64L << 30;

    private static final byte ACK = 1;
    private static final byte WRONG_BYTES = 2;
    private static final ValueLayout.OfLong PATTERN_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private PlainSocketBaseline() {}

    /** The server side, on its own threads. */
    public static final class Server implements AutoCloseable {
        private final ServerSocketChannel socket;
        private final boolean verify;
        private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
        private final HostMemory[] sources = regions(true);
        private final HostMemory[] sinks = regions(false);

        private Server(ServerSocketChannel socket, boolean verify) {
            this.socket = socket;
            this.verify = verify;
            Thread acceptor = new Thread(this::accept, "vgpu-baseline-accept");
            acceptor.setDaemon(true);
            acceptor.start();
        }

        /** Listens on {@code host:port} (port 0: any free port). */
        public static Server start(String host, int port) {
            return start(host, port, false);
        }

        /** As {@link #start}, and checks that every transfer into its memory carried the pattern: for tests, never for timing. */
        public static Server verifying(String host, int port) {
            return start(host, port, true);
        }

        private static Server start(String host, int port, boolean verify) {
            try {
                ServerSocketChannel channel = ServerSocketChannel.open();
                try {
                    int buffer = NettyTransport.socketBufferBytes();
                    if (buffer > 0) {
                        // set on the listener, so accepted connections negotiate their window with it
                        channel.setOption(StandardSocketOptions.SO_RCVBUF, buffer);
                    }
                    channel.bind(new InetSocketAddress(InetAddress.getByName(host), port), 16);
                    return new Server(channel, verify);
                } catch (IOException | RuntimeException e) {
                    channel.close();
                    throw e;
                }
            } catch (IOException e) {
                throw new NetworkException(
                        NetworkException.Code.CANNOT_LISTEN,
                        "the baseline server cannot listen on " + host + ":" + port + ": " + IoReasons.of(e),
                        e);
            }
        }

        public int port() {
            return socket.socket().getLocalPort();
        }

        private void accept() {
            while (socket.isOpen()) {
                try {
                    SocketChannel connection = socket.accept();
                    connections.add(connection);
                    Thread serving = new Thread(() -> serve(connection), "vgpu-baseline-serve");
                    serving.setDaemon(true);
                    serving.start();
                } catch (IOException closed) {
                    return;
                }
            }
        }

        private void serve(SocketChannel connection) {
            try (connection) {
                configure(connection);
                ByteBuffer header = ByteBuffer.allocate(Long.BYTES);
                readFully(connection, header.limit(1));
                switch (header.get(0)) {
                    case 'E' -> echo(connection);
                    case 'F' -> {
                        connection.configureBlocking(false);
                        echo(connection);
                    }
                    case 'S' -> {
                        readBulk(connection, count(connection, header, Long.MAX_VALUE), new CachedBuffer());
                        acknowledge(connection, ACK);
                    }
                    case 'P' -> writeBulk(connection, count(connection, header, Long.MAX_VALUE), new CachedBuffer());
                    case 'W' -> {
                        HostMemory sink = region(sinks, connection, header);
                        long bytes = count(connection, header, MAX_MEMORY_BYTES);
                        byte answer = sink.use(bytes, memory -> {
                            readBulk(connection, bytes, new Memory(memory));
                            return verify && !holdsPattern(memory.asSlice(0, bytes)) ? WRONG_BYTES : ACK;
                        });
                        acknowledge(connection, answer);
                    }
                    case 'R' -> {
                        HostMemory source = region(sources, connection, header);
                        long bytes = count(connection, header, MAX_MEMORY_BYTES);
                        source.use(bytes, memory -> {
                            writeBulk(connection, bytes, new Memory(memory));
                            return ACK;
                        });
                    }
                    default -> {}
                }
            } catch (IOException ended) {
                // the client went away, or asked for what this server does not serve
            } finally {
                connections.remove(connection);
            }
        }

        private static HostMemory[] regions(boolean pattern) {
            HostMemory[] regions = new HostMemory[PARALLEL_STREAMS];
            for (int i = 0; i < regions.length; i++) {
                regions[i] = new HostMemory(pattern);
            }
            return regions;
        }

        /** The region of {@code regions} the connection's next byte names. */
        private static HostMemory region(HostMemory[] regions, SocketChannel connection, ByteBuffer header)
                throws IOException {
            readFully(connection, header.clear().limit(1));
            int index = header.get(0);
            if (index < 0 || index >= regions.length) {
                throw new IOException("region " + index + " is not served");
            }
            return regions[index];
        }

        private static long count(SocketChannel connection, ByteBuffer header, long limit) throws IOException {
            readFully(connection, header.clear());
            long bytes = header.getLong(0);
            if (bytes < 0 || bytes > limit) {
                throw new IOException("a transfer of " + bytes + " bytes is not served");
            }
            return bytes;
        }

        private static void acknowledge(SocketChannel connection, byte answer) throws IOException {
            writeFully(connection, ByteBuffer.allocate(1).put(0, answer));
        }

        private static void echo(SocketChannel connection) throws IOException {
            ByteBuffer message = ByteBuffer.allocate(MESSAGE_BYTES);
            while (true) {
                try {
                    readFully(connection, message.clear());
                } catch (EOFException done) {
                    return;
                }
                writeFully(connection, message.flip());
            }
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing a listening socket fails only if it is already gone
            }
            for (SocketChannel connection : connections) {
                try {
                    connection.close();
                } catch (IOException ignored) {
                    // as above
                }
            }
            for (HostMemory region : sources) {
                region.close();
            }
            for (HostMemory region : sinks) {
                region.close();
            }
        }
    }

    /**
     * The server's native memory for one direction: allocated at the first transfer's size, grown
     * when a larger one comes, kept between connections so that its pages are faulted in once (as a
     * remote copy's device buffer and staging slots are), and used by one transfer at a time.
     */
    private static final class HostMemory {
        private final boolean pattern;
        private Arena arena;
        private MemorySegment memory = MemorySegment.NULL;
        private boolean closed;

        HostMemory(boolean pattern) {
            this.pattern = pattern;
        }

        synchronized byte use(long bytes, MemoryTransfer transfer) throws IOException {
            if (closed) {
                throw new IOException("the server is closed");
            }
            if (memory.byteSize() < bytes) {
                release();
                arena = Arena.ofShared();
                memory = arena.allocate(bytes, 64);
                if (pattern) {
                    fillPattern(memory);
                }
            }
            return transfer.run(memory);
        }

        synchronized void close() {
            closed = true;
            release();
        }

        private void release() {
            if (arena != null) {
                arena.close();
                arena = null;
                memory = MemorySegment.NULL;
            }
        }
    }

    @FunctionalInterface
    private interface MemoryTransfer {
        byte run(MemorySegment memory) throws IOException;
    }

    /** Where the slices of a bulk transfer live. */
    private sealed interface Slices {
        /** A buffer of {@code length} bytes, position 0, for the transfer's bytes at {@code offset}. */
        ByteBuffer at(long offset, int length);
    }

    /** Every slice in the same reused heap array: the bytes never leave the CPU caches. */
    private static final class CachedBuffer implements Slices {
        private final ByteBuffer buffer = ByteBuffer.allocate(CACHED_BUFFER_BYTES);

        @Override
        public ByteBuffer at(long offset, int length) {
            return buffer.clear().limit(length);
        }
    }

    /** Each slice its own part of native memory of the whole transfer's size. */
    private record Memory(MemorySegment memory) implements Slices {
        @Override
        public ByteBuffer at(long offset, int length) {
            return memory.asSlice(offset, length).asByteBuffer();
        }
    }

    /**
     * Nanoseconds per 64-byte round trip, averaged over {@code iterations} after as many warm-up trips; both ends wait
     * in blocking reads.
     */
    public static double roundTripNanos(String host, int port, int iterations) {
        return roundTripNanos(host, port, iterations, 'E');
    }

    /**
     * As {@link #roundTripNanos}, both ends retrying non-blocking reads instead: no thread sleeps in the kernel, as in
     * a C program that spins, so this is the floor of a round trip through Java's sockets.
     */
    public static double spinningRoundTripNanos(String host, int port, int iterations) {
        return roundTripNanos(host, port, iterations, 'F');
    }

    private static double roundTripNanos(String host, int port, int iterations, char mode) {
        try (SocketChannel socket = connect(host, port, mode)) {
            if (mode == 'F') {
                socket.configureBlocking(false);
            }
            ByteBuffer message = ByteBuffer.allocate(MESSAGE_BYTES);
            for (int i = 0; i < iterations; i++) {
                roundTrip(socket, message);
            }
            long start = System.nanoTime();
            for (int i = 0; i < iterations; i++) {
                roundTrip(socket, message);
            }
            return (double) (System.nanoTime() - start) / iterations;
        } catch (IOException e) {
            throw failed("round trip", host, port, e);
        }
    }

    /** Nanoseconds to send {@code bytes} to the server through a cached buffer on both ends, until it acknowledges them all. */
    public static long sendNanos(String host, int port, long bytes) {
        return send(host, port, 'S', 0, bytes, new CachedBuffer());
    }

    /**
     * Nanoseconds to send all of {@code from} to the server, which reads it into its own native
     * memory of that size, until it acknowledges them all.
     */
    public static long sendFromMemoryNanos(String host, int port, MemorySegment from) {
        return send(host, port, 'W', 0, from.byteSize(), new Memory(from));
    }

    /** Nanoseconds to receive {@code bytes} from the server through a cached buffer on both ends, from asking to the last byte. */
    public static long receiveNanos(String host, int port, long bytes) {
        return receive(host, port, 'P', 0, bytes, new CachedBuffer());
    }

    /**
     * Nanoseconds to fill all of {@code into} from the server, which sends from its own native memory
     * of that size (holding {@link #fillPattern the pattern}), from asking to the last byte.
     */
    public static long receiveIntoMemoryNanos(String host, int port, MemorySegment into) {
        return receive(host, port, 'R', 0, into.byteSize(), new Memory(into));
    }

    /** How many plain connections the parallel baseline runs at once: the 8 native streams of the striping goal. */
    public static final int PARALLEL_STREAMS = 8;

    /**
     * Nanoseconds for {@value #PARALLEL_STREAMS} connections, each on its own thread, to send {@code bytes} to the
     * server between them (an equal share each) through cached buffers, until the last acknowledged its share: the
     * Java baseline of what several TCP streams of this host carry at once.
     */
    public static long parallelSendNanos(String host, int port, long bytes) {
        return parallel(bytes, (stream, offset, share) -> send(host, port, 'S', 0, share, new CachedBuffer()));
    }

    /** As {@link #parallelSendNanos}, the server sending and the connections receiving. */
    public static long parallelReceiveNanos(String host, int port, long bytes) {
        return parallel(bytes, (stream, offset, share) -> receive(host, port, 'P', 0, share, new CachedBuffer()));
    }

    /**
     * As {@link #parallelSendNanos}, each connection sending its share of {@code from} (the first connection the
     * first share), which the server reads into native memory of its own per connection: the fair floor of a striped
     * copy to the device, which reads the caller's whole host buffer.
     */
    public static long parallelSendFromMemoryNanos(String host, int port, MemorySegment from) {
        return parallel(
                from.byteSize(),
                (stream, offset, share) ->
                        send(host, port, 'W', stream, share, new Memory(from.asSlice(offset, share))));
    }

    /** As {@link #parallelSendFromMemoryNanos}, the server sending and the connections receiving into {@code into}. */
    public static long parallelReceiveIntoMemoryNanos(String host, int port, MemorySegment into) {
        return parallel(
                into.byteSize(),
                (stream, offset, share) ->
                        receive(host, port, 'R', stream, share, new Memory(into.asSlice(offset, share))));
    }

    /** One connection's part of a parallel transfer: its index, and its share's offset and size. */
    @FunctionalInterface
    private interface Stream {
        void run(int stream, long offset, long share);
    }

    private static long parallel(long bytes, Stream stream) {
        long share = Math.ceilDiv(bytes, PARALLEL_STREAMS);
        CountDownLatch ready = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        List<RuntimeException> failures = Collections.synchronizedList(new ArrayList<>());
        for (int i = 0; i < PARALLEL_STREAMS; i++) {
            int index = i;
            long offset = Math.min(i * share, bytes);
            long length = Math.min(share, bytes - offset);
            threads.add(Thread.ofPlatform().name("vgpu-baseline-stream-" + i).start(() -> {
                try {
                    ready.await();
                    stream.run(index, offset, length);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } catch (RuntimeException e) {
                    failures.add(e);
                }
            }));
        }
        long start = System.nanoTime();
        ready.countDown();
        for (Thread thread : threads) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while the parallel baseline ran", e);
            }
        }
        long nanos = System.nanoTime() - start;
        if (!failures.isEmpty()) {
            throw failures.getFirst();
        }
        return nanos;
    }

    private static long send(String host, int port, char mode, int region, long bytes, Slices slices) {
        try (SocketChannel socket = connect(host, port, mode, region)) {
            ByteBuffer ack = ByteBuffer.allocate(1);
            long start = System.nanoTime();
            writeFully(socket, ByteBuffer.allocate(Long.BYTES).putLong(0, bytes));
            writeBulk(socket, bytes, slices);
            readFully(socket, ack);
            long nanos = System.nanoTime() - start;
            if (ack.get(0) == WRONG_BYTES) {
                throw new IOException("the server received bytes other than the pattern");
            }
            if (ack.get(0) != ACK) {
                throw new EOFException("the server did not acknowledge the bytes");
            }
            return nanos;
        } catch (IOException e) {
            throw failed("send", host, port, e);
        }
    }

    private static long receive(String host, int port, char mode, int region, long bytes, Slices slices) {
        try (SocketChannel socket = connect(host, port, mode, region)) {
            long start = System.nanoTime();
            writeFully(socket, ByteBuffer.allocate(Long.BYTES).putLong(0, bytes));
            readBulk(socket, bytes, slices);
            return System.nanoTime() - start;
        } catch (IOException e) {
            throw failed("receive", host, port, e);
        }
    }

    private static void writeBulk(SocketChannel socket, long bytes, Slices slices) throws IOException {
        for (long offset = 0; offset < bytes; ) {
            int length = (int) Math.min(CACHED_BUFFER_BYTES, bytes - offset);
            writeFully(socket, slices.at(offset, length));
            offset += length;
        }
    }

    private static void readBulk(SocketChannel socket, long bytes, Slices slices) throws IOException {
        for (long offset = 0; offset < bytes; ) {
            int length = (int) Math.min(CACHED_BUFFER_BYTES, bytes - offset);
            try {
                readFully(socket, slices.at(offset, length));
            } catch (EOFException e) {
                throw new EOFException("the peer closed the connection with " + (bytes - offset) + " bytes to go");
            }
            offset += length;
        }
    }

    private static void roundTrip(SocketChannel socket, ByteBuffer message) throws IOException {
        writeFully(socket, message.clear());
        readFully(socket, message.clear());
    }

    private static void writeFully(SocketChannel socket, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            socket.write(buffer);
        }
    }

    private static void readFully(SocketChannel socket, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (socket.read(buffer) < 0) {
                throw new EOFException("the peer closed the connection");
            }
        }
    }

    private static void configure(SocketChannel socket) throws IOException {
        socket.setOption(StandardSocketOptions.TCP_NODELAY, true);
        int buffer = NettyTransport.socketBufferBytes();
        if (buffer > 0) {
            socket.setOption(StandardSocketOptions.SO_RCVBUF, buffer);
            socket.setOption(StandardSocketOptions.SO_SNDBUF, buffer);
        }
    }

    private static SocketChannel connect(String host, int port, char mode) throws IOException {
        return connect(host, port, mode, 0);
    }

    /** A connection in {@code mode}; the modes into or from the server's memory name its {@code region}. */
    private static SocketChannel connect(String host, int port, char mode, int region) throws IOException {
        SocketChannel socket = SocketChannel.open();
        try {
            configure(socket);
            socket.connect(new InetSocketAddress(host, port));
            writeFully(
                    socket,
                    mode == 'W' || mode == 'R'
                            ? ByteBuffer.allocate(2).put(0, (byte) mode).put(1, (byte) region)
                            : ByteBuffer.allocate(1).put(0, (byte) mode));
            return socket;
        } catch (IOException | RuntimeException e) {
            socket.close();
            throw e;
        }
    }

    /**
     * Fills {@code memory} with the baseline's pattern: each aligned 8 bytes hold their index times
     * an odd constant, little-endian, so a shifted, repeated or missing slice shows.
     */
    public static void fillPattern(MemorySegment memory) {
        long longs = memory.byteSize() / Long.BYTES;
        for (long i = 0; i < longs; i++) {
            memory.setAtIndex(PATTERN_LONG, i, patternAt(i));
        }
        for (long offset = longs * Long.BYTES; offset < memory.byteSize(); offset++) {
            memory.set(ValueLayout.JAVA_BYTE, offset, patternByte(offset));
        }
    }

    /** Whether {@code memory} holds exactly what {@link #fillPattern} writes. */
    public static boolean holdsPattern(MemorySegment memory) {
        long longs = memory.byteSize() / Long.BYTES;
        for (long i = 0; i < longs; i++) {
            if (memory.getAtIndex(PATTERN_LONG, i) != patternAt(i)) {
                return false;
            }
        }
        for (long offset = longs * Long.BYTES; offset < memory.byteSize(); offset++) {
            if (memory.get(ValueLayout.JAVA_BYTE, offset) != patternByte(offset)) {
                return false;
            }
        }
        return true;
    }

    private static long patternAt(long index) {
        return (index + 1) * 0x9E37_79B9_7F4A_7C15L;
    }

    private static byte patternByte(long offset) {
        return (byte) (patternAt(offset / Long.BYTES) >>> (8 * (offset % Long.BYTES)));
    }

    private static VgpuException failed(String what, String host, int port, IOException e) {
        return new VgpuException(
                ErrorCode.VGPU_WORKER_LOST,
                "baseline " + what + " with " + host + ":" + port + " failed: " + e.getMessage(),
                e);
    }
}
