package org.vgpu.bench.remote;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.error.NetworkException;
import org.vgpu.runtime.remote.transport.NettyTransport;

/** The Netty rung of the round-trip ladder: its server echoes every byte, and its client waits for the echo. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class NettyEchoTest {
    private static final String HOST = "127.0.0.1";
    private final EventLoopGroup group = NettyTransport.newEventLoopGroup(1, "test-echo-client", 50_000);

    @AfterEach
    void shutDown() {
        group.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
    }

    @Test
    void theServerEchoesEveryByteInOrder() throws IOException {
        try (NettyEcho.Server server = NettyEcho.Server.start(HOST);
                SocketChannel client = SocketChannel.open(new InetSocketAddress(HOST, server.port()))) {
            byte[] sent = new byte[3 * PlainSocketBaseline.MESSAGE_BYTES];
            for (int i = 0; i < sent.length; i++) {
                sent[i] = (byte) (i * 7 + 1);
            }
            ByteBuffer out = ByteBuffer.wrap(sent);
            while (out.hasRemaining()) {
                client.write(out);
            }
            ByteBuffer back = ByteBuffer.allocate(sent.length);
            while (back.hasRemaining() && client.read(back) >= 0) {
                // until every byte came back
            }
            assertArrayEquals(sent, back.array());
        }
    }

    @Test
    void theClientTimesRoundTripsThatCameBack() {
        try (NettyEcho.Server server = NettyEcho.Server.start(HOST)) {
            assertTrue(NettyEcho.roundTripNanos(group, HOST, server.port(), 50) > 0);
        }
    }

    @Test
    void aServerThatNeverEchoesFailsTheClientRatherThanTimingNothing() throws IOException {
        try (ServerSocketChannel closing = ServerSocketChannel.open()) {
            closing.bind(new InetSocketAddress(InetAddress.getByName(HOST), 0));
            Thread.startVirtualThread(() -> {
                try {
                    // accepted, read nothing, closed: no message ever comes back
                    closing.accept().close();
                } catch (IOException ignored) {
                    // the test ended first
                }
            });
            int port = ((InetSocketAddress) closing.getLocalAddress()).getPort();
            assertThrows(NetworkException.class, () -> NettyEcho.roundTripNanos(group, HOST, port, 5));
        }
    }
}
