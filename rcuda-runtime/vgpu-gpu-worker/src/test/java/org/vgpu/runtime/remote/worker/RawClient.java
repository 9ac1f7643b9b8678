package org.vgpu.runtime.remote.worker;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.function.Consumer;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.FrameDecoder;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.Hello;
import org.vgpu.runtime.remote.protocol.Opcode;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.protocol.ReplyVisitor;
import org.vgpu.runtime.remote.protocol.RequestEncoder;
import org.vgpu.runtime.remote.protocol.Welcome;

/**
 * A client that writes whatever frames (or bytes) a test wants on a plain blocking socket and
 * reads the worker's replies as one line each, so tests can play a misbehaving or vanishing client.
 */
public final class RawClient implements AutoCloseable {
    private final Closeable connection;
    private final InputStream in;
    private final OutputStream out;
    private final EmbeddedChannel decoder = new EmbeddedChannel(new FrameDecoder(Opcode.Direction.REPLY));
    private Welcome welcome;
    private byte[] lastResult = new byte[0];

    public RawClient(String host, int port) {
        try {
            Socket socket = new Socket(host, port);
            socket.setSoTimeout(15_000);
            socket.setTcpNoDelay(true);
            connection = socket;
            in = socket.getInputStream();
            out = socket.getOutputStream();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private RawClient(SocketChannel channel) {
        connection = channel;
        in = Channels.newInputStream(channel);
        out = Channels.newOutputStream(channel);
    }

    private RawClient(Closeable connection, InputStream in, OutputStream out) {
        this.connection = connection;
        this.in = in;
        this.out = out;
    }

    /**
     * A client of a session served in this process, as vgpu's {@code libcuda.so.1} is one: each write is one call of
     * {@link InProcessWorker.Session#serve} with the frames in a direct buffer, and the replies are read from the
     * same buffer; a read with no reply due says "silent".
     */
    public static RawClient inProcess(InProcessWorker.Session session) {
        ByteBuffer[] buffer = {ByteBuffer.allocateDirect(64 << 10)};
        java.io.ByteArrayOutputStream inbox = new java.io.ByteArrayOutputStream();
        int[] read = {0};
        OutputStream requests = new OutputStream() {
            @Override
            public void write(int b) {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] bytes, int offset, int length) {
                if (length > buffer[0].capacity()) {
                    buffer[0] = ByteBuffer.allocateDirect(length);
                }
                buffer[0].clear().put(bytes, offset, length);
                take(session.serve(buffer[0], length));
            }

            private void take(int replies) {
                byte[] taken = new byte[replies];
                buffer[0].get(0, taken);
                inbox.writeBytes(taken);
            }
        };
        InputStream replies = new InputStream() {
            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] bytes, int offset, int length) throws IOException {
                if (read[0] == inbox.size()) {
                    int due = session.serve(buffer[0], 0);
                    byte[] taken = new byte[due];
                    buffer[0].get(0, taken);
                    inbox.reset();
                    inbox.writeBytes(taken);
                    read[0] = 0;
                    if (due == 0) {
                        throw new SocketTimeoutException("no reply is due");
                    }
                }
                byte[] all = inbox.toByteArray();
                int n = Math.min(length, all.length - read[0]);
                System.arraycopy(all, read[0], bytes, offset, n);
                read[0] += n;
                return n;
            }
        };
        return new RawClient(session::close, replies, requests);
    }

    /** A client of a local worker on its Unix domain socket {@code socket}; reads wait as long as the test lets them. */
    public static RawClient onSocket(Path socket) {
        try {
            return new RawClient(SocketChannel.open(UnixDomainSocketAddress.of(socket)));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The result of the last OK read. */
    public ByteBuf lastResult() {
        return Unpooled.wrappedBuffer(lastResult);
    }

    /** Sends the frames {@code frames} writes. */
    public RawClient send(Consumer<RequestEncoder> frames) {
        return sendBytes(encoded(frames));
    }

    /** The bytes of the frames {@code frames} writes, for a test that sends them in pieces of its own choosing. */
    public static byte[] encoded(Consumer<RequestEncoder> frames) {
        ByteBuf buffer = Unpooled.buffer();
        try {
            frames.accept(new RequestEncoder().wrap(buffer));
            return ByteBufUtil.getBytes(buffer);
        } finally {
            buffer.release();
        }
    }

    public RawClient hello(int requestId, String token, VaWindow window) {
        return send(encoder -> encoder.hello(requestId, new Hello(Frames.PROTOCOL_VERSION, token, window)));
    }

    /** A HELLO of the newest version that offers shared memory, as a client on the worker's host says it. */
    public RawClient helloOfferingSharedMemory(int requestId, String token, VaWindow window) {
        return send(encoder -> encoder.hello(requestId, new Hello(Frames.PROTOCOL_VERSION, token, window, true)));
    }

    /** The last WELCOME read. */
    public Welcome welcome() {
        return welcome;
    }

    public RawClient sendBytes(byte[] bytes) {
        try {
            out.write(bytes);
            out.flush();
            return this;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The next {@code length} bytes as they come, not as frames: what a stripe carries. */
    public byte[] readRaw(int length) {
        try {
            return in.readNBytes(length);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * The next reply as a line: "#ID welcome WORKER", "#ID pong", "#ID ok N bytes", "#ID error CODE: DETAIL",
     * "#ID data@OFFSET N bytes [more]" (with the bytes in hex under 16 of them); "closed" when the worker
     * closed the connection instead.
     */
    public String read() {
        try {
            while (true) {
                Frame frame = decoder.readInbound();
                if (frame != null) {
                    try {
                        return describe(frame);
                    } finally {
                        frame.release();
                    }
                }
                byte[] bytes = new byte[64 << 10];
                int n;
                try {
                    n = in.read(bytes);
                } catch (SocketTimeoutException e) {
                    return "silent";
                } catch (IOException reset) {
                    return "closed";
                }
                if (n < 0) {
                    return "closed";
                }
                decoder.writeInbound(Unpooled.wrappedBuffer(bytes, 0, n));
            }
        } finally {
            decoder.checkException();
        }
    }

    private String describe(Frame frame) {
        StringBuilder line = new StringBuilder();
        ReplyDecoder.dispatch(frame, new ReplyVisitor() {
            @Override
            public void welcome(int requestId, Welcome welcomed) {
                welcome = welcomed;
                line.append('#').append(requestId).append(" welcome ").append(welcomed.workerId());
            }

            @Override
            public void pong(int requestId) {
                line.append('#').append(requestId).append(" pong");
            }

            @Override
            public void ok(int requestId, ByteBuf result) {
                lastResult = ByteBufUtil.getBytes(result, result.readerIndex(), result.readableBytes());
                line.append('#')
                        .append(requestId)
                        .append(" ok ")
                        .append(result.readableBytes())
                        .append(" bytes");
            }

            @Override
            public void error(int requestId, VgpuException failure) {
                line.append('#').append(requestId).append(" error ").append(failure.getMessage());
            }

            @Override
            public void data(int requestId, boolean more, boolean failureKept, long offset, ByteBuf bytes) {
                line.append('#')
                        .append(requestId)
                        .append(" data@")
                        .append(offset)
                        .append(' ')
                        .append(bytes.readableBytes())
                        .append(" bytes")
                        .append(more ? " more" : "")
                        .append(failureKept ? " failure-kept" : "");
                if (bytes.readableBytes() < 16) {
                    line.append(" [").append(ByteBufUtil.hexDump(bytes)).append(']');
                }
            }
        });
        return line.toString();
    }

    /** Drops the connection without a goodbye, as a crashed client would. */
    @Override
    public void close() {
        try {
            connection.close();
        } catch (IOException ignored) {
            // already gone
        }
        try {
            decoder.finishAndReleaseAll();
        } catch (RuntimeException partialFrame) {
            // the worker's last frame was cut off by this close; nothing left to read anyway
        }
    }
}
