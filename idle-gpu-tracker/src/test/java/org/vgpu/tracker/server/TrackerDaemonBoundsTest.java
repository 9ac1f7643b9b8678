package org.vgpu.tracker.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.tracker.TestCluster;
import org.vgpu.tracker.Tracker;
import org.vgpu.tracker.ledger.Ledger;

/**
 * The tracker socket's resource bounds (README, "each listening socket"), as the worker's and the agent's bounds are
 * tested: connections beyond {@link TrackerDaemon#SOCKET_LIMITS} are refused with a reason, a request line beyond
 * its byte limit gets an error reply, a connection without a request is closed after the idle timeout, and the daemon
 * serves on after each.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TrackerDaemonBoundsTest {
    /** A request the tracker answers with one line whatever its state. */
    private static final String ONE_LINE_REQUEST = "assembly 7 n1";

    private static final String ONE_LINE_REPLY =
            "error job 7 has no vGPU assembly from the tracker (it was not" + " released by the tracker, or has ended)";

    @TempDir
    Path dir;

    private ThrowawaySiteKey key;
    private Ledger ledger;
    private TrackerDaemon daemon;
    private final List<Socket> clients = new ArrayList<>();

    @BeforeEach
    void cluster() throws IOException {
        key = ThrowawaySiteKey.create("tracker-bounds");
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket client : clients) {
            client.close();
        }
        if (daemon != null) {
            daemon.close();
        }
        key.close();
    }

    private void startDaemon(LineServer.Limits limits) throws IOException {
        ledger = Ledger.open(dir.resolve("tracker.ledger"));
        Tracker tracker = TestCluster.standingTracker(dir, key, ledger, Instant.parse("2026-11-25T10:00:00Z"));
        daemon = TrackerDaemon.start(
                tracker, ledger, new Endpoint("127.0.0.1", 0), Duration.ofHours(1), Optional.empty(), Set.of(), limits);
    }

    private Client connect() throws IOException {
        Socket socket = new Socket("127.0.0.1", daemon.endpoint().port());
        socket.setSoTimeout(10_000);
        clients.add(socket);
        return new Client(socket);
    }

    private record Client(Socket socket, BufferedReader in, OutputStream out) {
        Client(Socket socket) throws IOException {
            this(
                    socket,
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8)),
                    socket.getOutputStream());
        }

        String ask(String request) throws IOException {
            out.write((request + "\n").getBytes(StandardCharsets.UTF_8));
            out.flush();
            return in.readLine();
        }
    }

    @Test
    void theBoundsAreTheOnesReadmeStates() {
        assertEquals(1024, TrackerDaemon.SOCKET_LIMITS.maxConnections());
        assertEquals(4096, TrackerDaemon.SOCKET_LIMITS.maxRequestBytes());
        assertEquals(BridgeContract.REQUEST_LINE_BYTES, TrackerDaemon.SOCKET_LIMITS.maxRequestBytes());
        assertEquals(Duration.ofSeconds(30), TrackerDaemon.SOCKET_LIMITS.idleTimeout());
    }

    @Test
    void aConnectionBeyondTheLimitIsRefusedWithAReasonAndTheDaemonServesOnOnceOneLeaves() throws Exception {
        startDaemon(TrackerDaemon.SOCKET_LIMITS);
        int limit = TrackerDaemon.SOCKET_LIMITS.maxConnections();
        List<Client> held = new ArrayList<>();
        for (int i = 0; i < limit; i++) {
            Client client = connect();
            assertEquals(ONE_LINE_REPLY, client.ask(ONE_LINE_REQUEST), "connection " + (i + 1) + " is served");
            held.add(client);
        }

        Client oneTooMany = connect();
        assertEquals(
                "error too many tracker connections (1024), try again later",
                oneTooMany.in().readLine());
        assertNull(oneTooMany.in().readLine(), "the refused connection is closed");
        assertEquals(ONE_LINE_REPLY, held.getFirst().ask(ONE_LINE_REQUEST), "the held connections are still served");

        held.getLast().socket().close();
        // The slot comes back when the server's thread for that connection has seen it close.
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        String reply;
        do {
            reply = connect().ask(ONE_LINE_REQUEST);
        } while (!ONE_LINE_REPLY.equals(reply) && System.nanoTime() < deadline);
        assertEquals(ONE_LINE_REPLY, reply, "a newcomer is served once a connection left");
    }

    @Test
    void aLineBeyondTheLimitGetsAnErrorReplyAndTheConnectionServesOn() throws Exception {
        startDaemon(TrackerDaemon.SOCKET_LIMITS);
        int limit = TrackerDaemon.SOCKET_LIMITS.maxRequestBytes();
        try (Socket socket = new Socket("127.0.0.1", daemon.endpoint().port())) {
            socket.setSoTimeout(10_000);
            Client client = new Client(socket);

            String atTheLimit = "x".repeat(limit);
            String answered = client.ask(atTheLimit);
            assertTrue(answered.startsWith("error unknown command 'xxx"), answered);

            assertEquals(
                    "error request longer than 4096 bytes",
                    client.ask(ONE_LINE_REQUEST + " " + "x".repeat(limit - ONE_LINE_REQUEST.length())));
            assertEquals(
                    "error request longer than 4096 bytes",
                    client.ask("y".repeat(1 << 20)),
                    "a megabyte without a newline costs the line limit only");
            assertEquals(ONE_LINE_REPLY, client.ask(ONE_LINE_REQUEST), "the same connection serves on");
        }
        assertEquals(ONE_LINE_REPLY, connect().ask(ONE_LINE_REQUEST), "and so does the daemon");
    }

    /** With a 1 s idle timeout: the daemon's code path is the same, the wait 1 s instead of the real 30. */
    @Test
    void aConnectionWithoutARequestIsClosedAfterTheIdleTimeoutAndTheDaemonServesOn() throws Exception {
        Duration idle = Duration.ofSeconds(1);
        startDaemon(new LineServer.Limits(
                TrackerDaemon.SOCKET_LIMITS.name(),
                TrackerDaemon.SOCKET_LIMITS.maxRequestBytes(),
                TrackerDaemon.SOCKET_LIMITS.maxConnections(),
                idle));
        Client silent = connect();
        silent.socket().setSoTimeout(300);
        assertThrows(
                SocketTimeoutException.class,
                () -> silent.socket().getInputStream().read(),
                "open until the idle timeout");
        silent.socket().setSoTimeout(10_000);
        Client once = connect();
        assertEquals(ONE_LINE_REPLY, once.ask(ONE_LINE_REQUEST));
        Client unfinished = connect();
        unfinished.out().write("assembly 7".getBytes(StandardCharsets.US_ASCII));
        unfinished.out().flush();

        long start = System.nanoTime();
        assertEquals(-1, silent.socket().getInputStream().read(), "a connection that never sent a request is closed");
        assertNull(once.in().readLine(), "a connection silent since its last reply is closed");
        assertNull(unfinished.in().readLine(), "a request never finished is no request");
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(waitedMs < 8_000, "closed after " + waitedMs + " ms, not within a few idle timeouts");

        assertEquals(ONE_LINE_REPLY, connect().ask(ONE_LINE_REQUEST), "the daemon serves a newcomer");
    }
}
