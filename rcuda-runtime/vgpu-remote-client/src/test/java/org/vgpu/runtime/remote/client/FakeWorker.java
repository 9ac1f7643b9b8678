package org.vgpu.runtime.remote.client;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyEncoder;
import org.vgpu.runtime.remote.protocol.RequestDecoder;
import org.vgpu.runtime.remote.protocol.SharedRegionOffer;
import org.vgpu.runtime.remote.protocol.StripeOffer;
import org.vgpu.runtime.remote.protocol.Welcome;
import org.vgpu.runtime.remote.transport.StripedBulk;

/**
 * A worker played by the test on a plain socket: it reads the client's requests and answers
 * whatever the test says, including what no real worker would, to see the client hold its ground,
 * or in the order the test wants, to see when the client sends what (migration-agent's tests too).
 */
public final class FakeWorker implements AutoCloseable {
    static final DeviceProperties DEVICE = new DeviceProperties("fake device", 1L << 30, 8, 0, 1, 1024, 32, true);

    private final ServerSocket server;
    private final EmbeddedChannel decoder = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
    private Socket connection;
    private Hello lastHello;

    public FakeWorker() throws IOException {
        // room in the backlog for the session's connection and all its stripes at once
        server = new ServerSocket(0, 1 + StripedBulk.MAX_STRIPES, InetAddress.getLoopbackAddress());
        server.setSoTimeout(15_000);
    }

    public WorkerEndpoint endpoint() {
        return new WorkerEndpoint("fake", "127.0.0.1", server.getLocalPort(), "token", () -> {});
    }

    /** Waits for the client's next request: "OPCODE#ID"; the connection is accepted on the first call. */
    public String nextRequest() {
        try {
            if (connection == null) {
                connection = server.accept();
                connection.setSoTimeout(15_000);
            }
            InputStream in = connection.getInputStream();
            while (true) {
                Frame frame = decoder.readInbound();
                if (frame != null) {
                    try {
                        if (frame.opcode() == Opcode.HELLO) {
                            lastHello = RequestDecoder.hello(frame);
                        }
                        return frame.opcode() + "#" + frame.requestId();
                    } finally {
                        frame.release();
                    }
                }
                byte[] bytes = new byte[4096];
                int n = in.read(bytes);
                if (n < 0) {
                    return "closed";
                }
                decoder.writeInbound(Unpooled.wrappedBuffer(bytes, 0, n));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Waits for the client's next request, which must be of {@code opcode}, and returns its id.
     *
     * @throws AssertionError naming what came instead
     */
    public int expect(String opcode) {
        String request = nextRequest();
        if (!request.startsWith(opcode + "#")) {
            throw new AssertionError("expected " + opcode + ", the worker got " + request);
        }
        return Integer.parseInt(request.substring(opcode.length() + 1));
    }

    /** The last HELLO the client sent. */
    public Hello lastHello() {
        return lastHello;
    }

    /** Closes the connection, as a worker that refused a HELLO does; the next request is read from a new one. */
    public void dropConnection() throws IOException {
        connection.close();
        connection = null;
    }

    /** Answers HELLO as a worker does, with {@code idleTimeoutMillis} for the client's keepalive. */
    public void welcome(int idleTimeoutMillis) {
        int id = expect("HELLO");
        reply(encoder ->
                encoder.welcome(id, new Welcome(lastHello.protocolVersion(), "fake", idleTimeoutMillis, DEVICE)));
    }

    /** Answers HELLO with a WELCOME that offers {@code stripes} stripes joining with {@code key}. */
    public void welcomeWithStripes(int idleTimeoutMillis, int stripes, String key) {
        int id = expect("HELLO");
        reply(encoder -> encoder.welcome(
                id,
                new Welcome(
                        lastHello.protocolVersion(),
                        "fake",
                        idleTimeoutMillis,
                        DEVICE,
                        SharedRegionOffer.none("not offered"),
                        new StripeOffer(stripes, key, ""))));
    }

    /** A stripe connection of the session, accepted, with the HELLO it joined with. */
    public record Stripe(Socket socket, Hello hello) implements AutoCloseable {
        /** Writes {@code frames} on the stripe, as a worker refusing its join does. */
        public void reply(Consumer<ReplyEncoder> frames) {
            write(socket, frames);
        }

        /** Waits until the client closed the stripe, discarding what it sent. */
        public void awaitClosedByClient() {
            try {
                InputStream in = socket.getInputStream();
                byte[] discarded = new byte[4096];
                while (in.read(discarded) >= 0) {
                    // the chunks of a stripe that is refused are not read
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** Accepts the next stripe connection and reads its HELLO. */
    public Stripe acceptStripe() {
        EmbeddedChannel stripeDecoder = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REQUEST));
        try {
            Socket stripe = server.accept();
            stripe.setSoTimeout(15_000);
            InputStream in = stripe.getInputStream();
            while (true) {
                Frame frame = stripeDecoder.readInbound();
                if (frame != null) {
                    try {
                        return new Stripe(stripe, RequestDecoder.hello(frame));
                    } finally {
                        frame.release();
                    }
                }
                // byte by byte: what follows the HELLO on the stripe stays in the socket for the test
                int b = in.read();
                if (b < 0) {
                    throw new IOException("the stripe closed before its HELLO");
                }
                stripeDecoder.writeInbound(Unpooled.wrappedBuffer(new byte[] {(byte) b}));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            stripeDecoder.finishAndReleaseAll();
        }
    }

    public void reply(Consumer<ReplyEncoder> frames) {
        write(connection, frames);
    }

    private static void write(Socket socket, Consumer<ReplyEncoder> frames) {
        ByteBuf buffer = Unpooled.buffer();
        try {
            frames.accept(new ReplyEncoder().wrap(buffer));
            OutputStream out = socket.getOutputStream();
            out.write(ByteBufUtil.getBytes(buffer));
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            buffer.release();
        }
    }

    /** A DATA frame carrying {@code bytes}, whatever the copy asked for. */
    public void data(int requestId, boolean more, long offset, byte[] bytes) {
        data(requestId, more, false, offset, bytes);
    }

    /** A DATA frame that may say the worker keeps an asynchronous failure. */
    public void data(int requestId, boolean more, boolean failureKept, long offset, byte[] bytes) {
        ByteBuf buffer = Unpooled.buffer();
        try {
            new ReplyEncoder().wrap(buffer).dataHeader(requestId, more, failureKept, offset, bytes.length);
            buffer.writeBytes(bytes);
            send(ByteBufUtil.getBytes(buffer));
        } finally {
            buffer.release();
        }
    }

    public void send(byte[] bytes) {
        try {
            OutputStream out = connection.getOutputStream();
            out.write(bytes);
            out.flush();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() throws IOException {
        if (connection != null) {
            connection.close();
        }
        server.close();
        decoder.finishAndReleaseAll();
    }
}
