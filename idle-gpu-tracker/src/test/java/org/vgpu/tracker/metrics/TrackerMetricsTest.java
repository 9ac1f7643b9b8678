package org.vgpu.tracker.metrics;

import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import org.vgpu.common.BuildInfo;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.tracker.SampleStatus;
import org.vgpu.tracker.StatusReport;

/** {@code /metrics} scraped over real HTTP, as Prometheus does. */
class TrackerMetricsTest {
    private final AtomicReference<StatusReport> status = new AtomicReference<>(SampleStatus.report());
    private final TrackerMetrics metrics = new TrackerMetrics(status::get);

    @Test
    void aVgpuThatMovedHomeIsNoLongerABorrowedGpu() throws Exception {
        status.set(SampleStatus.reportAfterVgpu1CameHome());
        try (MetricsHttpServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            String text = scrape(server.port());
            assertTrue(text.lines().anyMatch("vgpu_borrowed_gpus 1.0"::equals), text);
        }
    }

    @Test
    void aScrapeShowsTheTrackersStateAndTheMigrationsReportedToIt() throws Exception {
        metrics.migrationFinished("home", "done", 0.18);
        metrics.migrationFinished("home", "done", 2.0);
        metrics.migrationFinished("home", "failed", 0);

        try (MetricsHttpServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            String text = scrape(server.port());

            for (String line : List.of(
                    "# HELP vgpu_borrowed_gpus GPUs lent now to jobs of other nodes (one per borrowed vGPU of a live"
                            + " assembly)",
                    "# TYPE vgpu_borrowed_gpus gauge",
                    "vgpu_borrowed_gpus 2.0",
                    "vgpu_live_assemblies{phase=\"released\"} 1.0",
                    "vgpu_live_assemblies{phase=\"securing\"} 0.0",
                    "# TYPE vgpu_assemblies_total counter",
                    "vgpu_assemblies_total{outcome=\"aborted\"} 1.0",
                    "vgpu_assemblies_total{outcome=\"done\"} 3.0",
                    "vgpu_held_jobs 1.0",
                    "vgpu_idle_gpus{node=\"n1\"} 0.0",
                    "vgpu_idle_gpus{node=\"n2\"} 2.0",
                    "# TYPE vgpu_migrations_total counter",
                    "vgpu_migrations_total{direction=\"home\",outcome=\"done\"} 2.0",
                    "vgpu_migrations_total{direction=\"home\",outcome=\"failed\"} 1.0",
                    "# TYPE vgpu_migration_blocked_seconds histogram",
                    "vgpu_migration_blocked_seconds_bucket{le=\"0.01\"} 1",
                    "vgpu_migration_blocked_seconds_bucket{le=\"0.25\"} 2",
                    "vgpu_migration_blocked_seconds_bucket{le=\"2.5\"} 3",
                    "vgpu_migration_blocked_seconds_bucket{le=\"+Inf\"} 3",
                    "vgpu_migration_blocked_seconds_count 3",
                    "vgpu_migration_blocked_seconds_sum 2.18")) {
                assertTrue(text.lines().anyMatch(line::equals), line + "\n---\n" + text);
            }

            // Gauges are read at the scrape: the next one sees the tracker's new state.
            status.set(new StatusReport(
                    SampleStatus.NOW,
                    List.of(),
                    List.of(),
                    List.of(),
                    List.of(new StatusReport.NodeIdle("n1", List.of(0, 1, 2, 3))),
                    List.of(),
                    Map.of("done", 4L, "aborted", 1L)));
            String later = scrape(server.port());
            assertTrue(later.lines().anyMatch("vgpu_borrowed_gpus 0.0"::equals), later);
            assertTrue(later.lines().anyMatch("vgpu_held_jobs 0.0"::equals), later);
            assertTrue(later.lines().anyMatch("vgpu_idle_gpus{node=\"n1\"} 4.0"::equals), later);
            assertTrue(later.lines().anyMatch("vgpu_assemblies_total{outcome=\"done\"} 4.0"::equals), later);
            assertTrue(later.lines().noneMatch(line -> line.startsWith("vgpu_idle_gpus{node=\"n2\"}")), later);
        }
    }

    @Test
    void aScrapeNamesTheBuildTheTrackerRuns() throws Exception {
        BuildInfo build = BuildInfo.current();
        try (MetricsHttpServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            String text = scrape(server.port());
            String line = "vgpu_build_info{commit=\"" + build.commit() + "\",version=\"" + build.version() + "\"} 1";
            assertTrue(text.lines().anyMatch(line::equals), line + "\n---\n" + text);
            assertTrue(text.lines().anyMatch("# TYPE vgpu_build_info gauge"::equals), text);
        }
    }

    @Test
    void theHookReportsMigrationsInWordsAndTimesThatMakeSense() {
        for (String[] labels :
                List.of(new String[] {"Home", "done"}, new String[] {"home", ""}, new String[] {"home", "done\"}"})) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> metrics.migrationFinished(labels[0], labels[1], 1));
            assertTrue(e.getMessage().contains("lower-case words"), e.getMessage());
        }
        for (double seconds : new double[] {-1, Double.NaN, Double.POSITIVE_INFINITY}) {
            assertThrows(IllegalArgumentException.class, () -> metrics.migrationFinished("home", "done", seconds));
        }
    }

    @Test
    void aBusyAddressIsAClearError() {
        try (MetricsHttpServer first = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            NetworkException e =
                    assertThrows(NetworkException.class, () -> metrics.serve(new Endpoint("127.0.0.1", first.port())));
            assertEquals(NetworkException.Code.CANNOT_LISTEN, e.code());
            assertTrue(
                    e.getMessage().startsWith("cannot serve /metrics on 127.0.0.1:" + first.port() + ": "),
                    e.getMessage());
        }
    }

    @Test
    void connectionsThatNeverFinishTheirRequestDoNotStopAScrape() throws Exception {
        try (MetricsHttpServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            List<Socket> idle = new ArrayList<>();
            try {
                for (int i = 0; i < 200; i++) {
                    Socket socket = new Socket("127.0.0.1", server.port());
                    socket.getOutputStream().write("GET /metrics HTTP/1.1\r\nHost: x\r\n".getBytes(US_ASCII));
                    idle.add(socket);
                }
                String text = scrape(server.port());
                assertTrue(text.lines().anyMatch("vgpu_held_jobs 1.0"::equals), text);
            } finally {
                for (Socket socket : idle) {
                    socket.close();
                }
            }
        }
    }

    @Test
    void aRequestThatDoesNotArriveInTimeIsClosedAndATooLongOneRefused() throws Exception {
        MetricsHttpServer.Limits limits = new MetricsHttpServer.Limits(4, Duration.ofMillis(500), 1024);
        try (MetricsHttpServer server =
                        MetricsHttpServer.start(new Endpoint("127.0.0.1", 0), metrics.registry(), limits);
                Socket slow = new Socket("127.0.0.1", server.port())) {
            slow.setSoTimeout(5000);
            long start = System.nanoTime();
            slow.getOutputStream().write("GET /metrics HTTP/1.1\r\n".getBytes(US_ASCII));
            for (int i = 0; i < 3; i++) {
                Thread.sleep(200); // a byte now and then does not keep a request alive past its time
                slow.getOutputStream().write('X');
            }
            assertEquals(-1, slow.getInputStream().read(), "closed without an answer");
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertTrue(tookMs >= 450 && tookMs < 3000, tookMs + " ms");

            String reply = raw(server.port(), "GET /metrics HTTP/1.1\r\nX: " + "y".repeat(2000) + "\r\n\r\n");
            assertTrue(reply.startsWith("HTTP/1.1 431 Request Header Fields Too Large\r\n"), reply);
            assertTrue(scrape(server.port()).contains("vgpu_held_jobs 1.0"));
        }
    }

    @Test
    void moreStalledConnectionsThanItsBoundCloseTheOldestAndAScrapeStillAnswers() throws Exception {
        MetricsHttpServer.Limits limits = new MetricsHttpServer.Limits(8, Duration.ofMinutes(1), 1024);
        try (MetricsHttpServer server =
                MetricsHttpServer.start(new Endpoint("127.0.0.1", 0), metrics.registry(), limits)) {
            List<Socket> stalled = new ArrayList<>();
            try {
                for (int i = 0; i < 20; i++) {
                    Socket socket = new Socket("127.0.0.1", server.port());
                    socket.setSoTimeout(5000);
                    socket.getOutputStream().write("GET /metrics HTTP/1.1\r\n".getBytes(US_ASCII));
                    stalled.add(socket);
                }
                assertTrue(scrape(server.port()).contains("vgpu_held_jobs 1.0"));
                // the first twelve gave their places to later ones (and the one place of the scrape)
                for (Socket socket : stalled.subList(0, 12)) {
                    assertEquals(-1, socket.getInputStream().read());
                }
            } finally {
                for (Socket socket : stalled) {
                    socket.close();
                }
            }
        }
    }

    @Test
    void itListensOnTheConfiguredAddressOnlyAndAnswersOtherPathsAndMethodsPlainly() throws Exception {
        try (MetricsHttpServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            assertEquals("127.0.0.1", server.address().getHostAddress());
            assertTrue(raw(server.port(), "GET / HTTP/1.1\r\n\r\n").startsWith("HTTP/1.1 404 Not Found\r\n"));
            assertTrue(raw(server.port(), "POST /metrics HTTP/1.1\r\n\r\n")
                    .startsWith("HTTP/1.1 405 Method Not Allowed\r\n"));
            assertTrue(raw(server.port(), "hello\r\n\r\n").startsWith("HTTP/1.1 400 Bad Request\r\n"));
            String head = raw(server.port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
            assertTrue(head.startsWith("HTTP/1.1 200 OK\r\n") && head.endsWith("\r\n\r\n"), head);
        }
    }

    private static String raw(int port, String request) throws Exception {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(5000);
            socket.getOutputStream().write(request.getBytes(US_ASCII));
            return new String(socket.getInputStream().readAllBytes(), US_ASCII);
        }
    }

    private static String scrape(int port) throws Exception {
        try (HttpClient client =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build()) {
            HttpResponse<String> response = client.send(
                    HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                            .timeout(Duration.ofSeconds(5))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, response.statusCode(), response.body());
            return response.body();
        }
    }
}
