package org.vgpu.migration.agent;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.vgpu.common.line.BoundedLineReader;

/** A test client of the agent's socket: raw bytes out, reply lines in. */
final class AgentClient implements AutoCloseable {
    private final SocketChannel channel;
    private final BoundedLineReader replies;

    AgentClient(Path socket) throws IOException {
        channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        channel.connect(UnixDomainSocketAddress.of(socket));
        replies = new BoundedLineReader(Channels.newInputStream(channel), 1 << 20);
    }

    /** Sends {@code command} and a line end, returns the reply line. */
    String send(String command) throws IOException {
        return sendBytes((command + "\n").getBytes(StandardCharsets.UTF_8));
    }

    String sendBytes(byte[] bytes) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
        return readLine();
    }

    /** The next reply line, or null when the agent closed the connection. */
    String readLine() throws IOException {
        BoundedLineReader.Line line = replies.readLine();
        return line == null ? null : line.text();
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
