package org.vgpu.migration.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.error.InputException;
import org.vgpu.common.line.LineServer;
import org.vgpu.common.line.LineService;
import org.vgpu.common.net.Endpoint;

/** The link's life with a tracker that refuses, holds or is not there: it retries, recovers and stops on close. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TrackerLinkTest {
    private static final AgentChannel.Credential CREDENTIAL = new AgentChannel.Credential("42", 1, "v1.token.mac");
    private static final TrackerGrants NO_GRANTS = new TrackerGrants() {
        @Override
        public boolean grantLocalGpu(int nodeGpu) {
            throw new AssertionError("no command was sent");
        }

        @Override
        public void withdrawLocalGpu(int nodeGpu) {
            throw new AssertionError("no command was sent");
        }

        @Override
        public void grantWorker(int vgpu, Endpoint worker, String sessionToken) {
            throw new AssertionError("no command was sent");
        }
    };

    private final List<String> requests = new CopyOnWriteArrayList<>();

    private LineServer tracker(LineService service) {
        return LineServer.start(
                new Endpoint("127.0.0.1", 0),
                new LineServer.Limits("test tracker", 4096, 8, Duration.ofMinutes(1)),
                (line, host) -> {
                    requests.add(line.text());
                    return service.answer(line, host);
                });
    }

    /** A link to {@code server} that retries after 10 to 20 ms, so a test sees several polls at once. */
    private static TrackerLink pollingQuickly(LineServer server, Optional<Instant> expectedEnd) {
        return TrackerLink.start(
                at(server),
                CREDENTIAL,
                expectedEnd,
                List.of(),
                NO_GRANTS,
                Duration.ofMillis(10),
                Duration.ofMillis(20));
    }

    private static TrackerLink.Address at(LineServer server) {
        return TrackerLink.Address.parse(server.endpoint().toString());
    }

    private void awaitRequests(int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (requests.size() < count) {
            assertTrue(System.nanoTime() < deadline, () -> "only " + requests.size() + " requests: " + requests);
            Thread.sleep(10);
        }
    }

    @Test
    void aRefusingTrackerIsAskedAgainAfterABackoffAndPollsGoOnOnceItAnswers() throws Exception {
        AtomicInteger answered = new AtomicInteger();
        try (LineServer server = tracker((line, host) -> List.of(
                        answered.incrementAndGet() <= 2
                                ? "error job 42 is not known yet"
                                : new AgentChannel.Idle().format()));
                TrackerLink _ = TrackerLink.start(
                        at(server),
                        CREDENTIAL,
                        Optional.empty(),
                        List.of(),
                        NO_GRANTS,
                        Duration.ofMillis(100),
                        Duration.ofMillis(150))) {
            long start = System.nanoTime();
            awaitRequests(5);
            assertTrue(
                    System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(200), "two refusals cost two backoffs");
            for (String request : requests) {
                AgentChannel.Poll poll = (AgentChannel.Poll) AgentChannel.parseRequest(request);
                assertEquals(CREDENTIAL, poll.credential());
            }
            assertEquals(
                    requests.size(),
                    requests.stream()
                            .map(request -> ((AgentChannel.Poll) AgentChannel.parseRequest(request)).nonce())
                            .distinct()
                            .count(),
                    "every poll has a fresh nonce");
        }
    }

    @Test
    void everyPollCarriesTheJobsExpectedEndAndNoneWithoutAHint() throws Exception {
        Instant end = Instant.parse("2026-11-25T09:00:00Z");
        try (LineServer server = tracker((line, host) -> List.of(new AgentChannel.Idle().format()))) {
            try (TrackerLink _ = pollingQuickly(server, Optional.of(end))) {
                awaitRequests(2);
            }
            List<AgentChannel.Request> hinted =
                    requests.stream().map(AgentChannel::parseRequest).toList();
            for (AgentChannel.Request request : hinted.subList(0, hinted.size() - 1)) {
                assertEquals(Optional.of(end), ((AgentChannel.Poll) request).expectedEnd());
            }
            requests.clear();
            try (TrackerLink _ = pollingQuickly(server, Optional.empty())) {
                awaitRequests(1);
            }
            assertEquals(
                    Optional.empty(),
                    ((AgentChannel.Poll) AgentChannel.parseRequest(requests.getFirst())).expectedEnd());
        }
    }

    @Test
    void closeTellsTheTrackerTheAgentStopsAfterItsLastPoll() throws Exception {
        try (LineServer server = tracker((line, host) -> List.of(
                line.text().startsWith("agent bye ")
                        ? new AgentChannel.Accepted().format()
                        : new AgentChannel.Idle().format()))) {
            try (TrackerLink _ = pollingQuickly(server, Optional.empty())) {
                awaitRequests(1);
            }
            List<AgentChannel.Request> sent =
                    requests.stream().map(AgentChannel::parseRequest).toList();
            assertEquals(new AgentChannel.Bye(CREDENTIAL), sent.getLast());
            assertEquals(
                    1, sent.stream().filter(AgentChannel.Bye.class::isInstance).count(), sent.toString());
            assertTrue(sent.subList(0, sent.size() - 1).stream().allMatch(AgentChannel.Poll.class::isInstance));
        }
    }

    @Test
    void anUnreachableTrackerIsRetriedAndCloseEndsTheWaitAtOnce() throws Exception {
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        TrackerLink link = TrackerLink.start(
                TrackerLink.Address.parse("127.0.0.1:" + port),
                CREDENTIAL,
                Optional.empty(),
                List.of(),
                NO_GRANTS,
                Duration.ofSeconds(30),
                Duration.ofSeconds(30));
        Thread.sleep(300);
        long start = System.nanoTime();
        link.close();
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "close does not wait out the backoff");
    }

    @Test
    void closeEndsAPollTheTrackerHolds() throws Exception {
        try (LineServer server = tracker((line, host) -> {
            try {
                Thread.sleep(15_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return List.of(new AgentChannel.Idle().format());
        })) {
            TrackerLink link = TrackerLink.start(at(server), CREDENTIAL, Optional.empty(), List.of(), NO_GRANTS);
            awaitRequests(1);
            long start = System.nanoTime();
            link.close();
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "close does not wait out the hold");
        }
    }

    @Test
    void theTrackersAddressIsHostAndPortOrAUnixSocket() {
        assertEquals(
                new TrackerLink.Address(Optional.of(new Endpoint("tracker.example", 7100)), Optional.empty()),
                TrackerLink.Address.parse("tracker.example:7100"));
        assertEquals(
                new TrackerLink.Address(Optional.empty(), Optional.of(Path.of("/run/vgpu/tracker.sock"))),
                TrackerLink.Address.parse("unix:/run/vgpu/tracker.sock"));
        assertEquals(
                "unix:/run/vgpu/tracker.sock",
                TrackerLink.Address.parse("unix:/run/vgpu/tracker.sock").toString());
        assertThrows(InputException.class, () -> TrackerLink.Address.parse("tracker.example:0"));
        assertThrows(InputException.class, () -> TrackerLink.Address.parse("tracker.example"));
    }
}
