package org.vgpu.common.line;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.vgpu.common.error.IoReasons;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;

/**
 * Sends one request to a {@link LineServer}, over TCP or a UNIX domain socket, and reads its reply:
 * lines up to and including the first one that starts with {@code ok} or {@code error}
 * (single-line replies are just that line).
 */
public final class LineClient {
    /** Replies of this client's peers are short; a longer line is a peer speaking another protocol. */
    private static final int MAX_REPLY_LINE_BYTES = 64 * 1024;

    private static final int MAX_REPLY_LINES = 100_000;

    private LineClient() {}

    /**
     * @param timeout for connecting, and for the reply's next line
     * @throws NetworkException naming the peer when it cannot be reached (UNREACHABLE), stops
     *         answering or ends the connection before a final line (UNREACHABLE), or sends an
     *         oversized reply (PROTOCOL)
     */
    public static List<String> request(Endpoint peer, String requestLine, Duration timeout) {
        return request(
                SocketChannel::open,
                new InetSocketAddress(peer.host(), peer.port()),
                peer.toString(),
                requestLine,
                timeout);
    }

    /** The same over the UNIX domain socket {@code socketFile}. */
    public static List<String> request(Path socketFile, String requestLine, Duration timeout) {
        return request(
                () -> SocketChannel.open(StandardProtocolFamily.UNIX),
                UnixDomainSocketAddress.of(socketFile),
                socketFile.toString(),
                requestLine,
                timeout);
    }

    private interface ChannelOpener {
        SocketChannel open() throws IOException;
    }

    private static List<String> request(
            ChannelOpener opener, SocketAddress address, String peer, String requestLine, Duration timeout) {
        try (SocketChannel channel = opener.open();
                IdleCloser.Watch watch = IdleCloser.watch(channel, timeout)) {
            channel.connect(address);
            ByteBuffer request = ByteBuffer.wrap((requestLine + "\n").getBytes(StandardCharsets.UTF_8));
            while (request.hasRemaining()) {
                channel.write(request);
            }
            BoundedLineReader reader = new BoundedLineReader(Channels.newInputStream(channel), MAX_REPLY_LINE_BYTES);
            List<String> lines = new ArrayList<>();
            for (BoundedLineReader.Line line = reader.readLine(); line != null; line = reader.readLine()) {
                watch.idle();
                if (line.truncated() || lines.size() >= MAX_REPLY_LINES) {
                    throw new NetworkException(NetworkException.Code.PROTOCOL, peer + " sent a reply that is too long");
                }
                lines.add(line.text());
                if (line.text().startsWith("ok") || line.text().startsWith("error")) {
                    return lines;
                }
            }
            throw new NetworkException(
                    NetworkException.Code.UNREACHABLE, peer + " closed the connection before its reply ended");
        } catch (AsynchronousCloseException e) {
            throw new NetworkException(
                    NetworkException.Code.UNREACHABLE,
                    peer + " did not answer '" + LineText.withoutSecrets(requestLine, 40) + "' within "
                            + timeout.toSeconds() + " s",
                    e);
        } catch (IOException e) {
            throw new NetworkException(
                    NetworkException.Code.UNREACHABLE,
                    "cannot ask " + peer + " '" + LineText.withoutSecrets(requestLine, 40) + "': " + IoReasons.of(e),
                    e);
        }
    }
}
