package org.vgpu.tracker.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
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
        try (HTTPServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            String text = scrape(server.getPort());
            assertTrue(text.lines().anyMatch("vgpu_borrowed_gpus 1.0"::equals), text);
        }
    }

    @Test
    void aScrapeShowsTheTrackersStateAndTheMigrationsReportedToIt() throws Exception {
        metrics.migrationFinished("home", "done", 0.18);
        metrics.migrationFinished("home", "done", 2.0);
        metrics.migrationFinished("home", "failed", 0);

        try (HTTPServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            String text = scrape(server.getPort());

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
            String later = scrape(server.getPort());
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
        try (HTTPServer server = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            String text = scrape(server.getPort());
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
        try (HTTPServer first = metrics.serve(new Endpoint("127.0.0.1", 0))) {
            NetworkException e = assertThrows(
                    NetworkException.class, () -> metrics.serve(new Endpoint("127.0.0.1", first.getPort())));
            assertEquals(NetworkException.Code.CANNOT_LISTEN, e.code());
            assertTrue(
                    e.getMessage().startsWith("cannot serve /metrics on 127.0.0.1:" + first.getPort() + ": "),
                    e.getMessage());
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
