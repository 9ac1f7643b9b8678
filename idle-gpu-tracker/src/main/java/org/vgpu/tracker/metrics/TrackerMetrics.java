package org.vgpu.tracker.metrics;

import java.util.Locale;
import java.util.Objects;
import java.util.function.Supplier;
import java.util.regex.Pattern;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import org.vgpu.common.BuildInfo;
import org.vgpu.common.error.NetworkException;
import org.vgpu.common.net.Endpoint;
import org.vgpu.tracker.StatusReport;
import org.vgpu.tracker.ledger.Assembly;

/**
 * The tracker's Prometheus metrics, through the official Prometheus Java client. Gauges are computed
 * from the tracker's {@link StatusReport} at each scrape, so they cannot drift from what {@code vgpu
 * report} shows; counters and the histogram count events as the tracker reports them here (the
 * migration hook calls {@link #migrationFinished}). Names follow Prometheus' conventions: a
 * {@code vgpu_} prefix, base units (seconds), {@code _total} on counters.
 *
 * <pre>
 * vgpu_borrowed_gpus                          GPUs lent now to jobs of other nodes
 * vgpu_live_assemblies{phase}                 live assemblies: securing or released
 * vgpu_assemblies_total{outcome}              assemblies that ended: done, gone, ended, aborted
 * vgpu_held_jobs                              vgpu jobs held, waiting for an assembly
 * vgpu_idle_gpus{node}                        GPUs no job holds, per node
 * vgpu_migrations_total{direction,outcome}    migrations that ended
 * vgpu_migration_blocked_seconds              how long a migration held the job's calls (histogram)
 * vgpu_build_info{version,commit}             1, labelled with the build the tracker runs ({@link BuildInfo})
 * </pre>
 */
public final class TrackerMetrics {
    /** A label value: what the hook says in one word (home, away, remote; done, failed, ...). */
    private static final Pattern WORD = Pattern.compile("[a-z][a-z0-9_]{0,31}");

    /**
     * Bucket bounds of the blocked time, in seconds: a small vGPU moves in milliseconds, a full 80 GB one
     * over a slow link in minutes.
     */
    private static final double[] BLOCKED_SECONDS_BOUNDS = {0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300
    };

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter migrations;
    private final Histogram blocked;

    /** @param status what the tracker knows now; asked at every scrape */
    public TrackerMetrics(Supplier<StatusReport> status) {
        Objects.requireNonNull(status, "status");
        GaugeWithCallback.builder()
                .name("vgpu_borrowed_gpus")
                .help("GPUs lent now to jobs of other nodes (one per borrowed vGPU of a live assembly)")
                .callback(gauge -> gauge.call(status.get().assemblies().stream()
                        .mapToInt(live -> live.assembly().borrowedLends().size())
                        .sum()))
                .register(registry);
        GaugeWithCallback.builder()
                .name("vgpu_live_assemblies")
                .help("live assemblies of vgpu jobs, by phase: securing (holders starting) or released (the job runs)")
                .labelNames("phase")
                .callback(gauge -> {
                    StatusReport now = status.get();
                    for (Assembly.Phase phase : Assembly.Phase.values()) {
                        gauge.call(
                                (double) now.assemblies().stream()
                                        .filter(live -> live.assembly().phase() == phase)
                                        .count(),
                                phase.name().toLowerCase(Locale.ROOT));
                    }
                })
                .register(registry);
        // The tracker keeps the totals: a counter is the tracker's own count since it started, read at the scrape.
        CounterWithCallback.builder()
                .name("vgpu_assemblies_total")
                .help("assemblies that ended since the tracker started, by outcome: done (the batch step ended), gone"
                        + " (Slurm forgot the job), ended (the job left the running states), aborted (given up while"
                        + " securing)")
                .labelNames("outcome")
                .callback(counter -> status.get().endedTotals().forEach((why, count) -> counter.call(count, why)))
                .register(registry);
        GaugeWithCallback.builder()
                .name("vgpu_held_jobs")
                .help("vgpu jobs Slurm holds until the tracker can assemble them (vgpu report shows why each waits)")
                .callback(gauge -> gauge.call(status.get().waiting().size()))
                .register(registry);
        GaugeWithCallback.builder()
                .name("vgpu_idle_gpus")
                .help("GPUs no job holds, per node, at the tracker's last look at Slurm")
                .labelNames("node")
                .callback(gauge -> {
                    for (StatusReport.NodeIdle node : status.get().idleGpus()) {
                        gauge.call(node.gpus().size(), node.node());
                    }
                })
                .register(registry);
        migrations = Counter.builder()
                .name("vgpu_migrations_total")
                .help("migrations of borrowed vGPUs that ended, by direction (home: onto a GPU of the job's node)"
                        + " and outcome")
                .labelNames("direction", "outcome")
                .register(registry);
        blocked = Histogram.builder()
                .name("vgpu_migration_blocked_seconds")
                .help("how long a migration held the job's calls on the vGPU it moved")
                .classicOnly()
                .classicUpperBounds(BLOCKED_SECONDS_BOUNDS)
                .register(registry);
        BuildInfo build = BuildInfo.current();
        Info.builder()
                .name("vgpu_build_info")
                .help("the vgpu build the tracker runs (vgpu --version): its version and git commit")
                .labelNames("version", "commit")
                .register(registry)
                .setLabelValues(build.version(), build.commit());
    }

    /**
     * A migration ended: counted by direction and outcome, its blocked time observed (a migration that
     * failed before blocking the job passes 0).
     *
     * @param direction      {@code home} (onto a GPU of the job's node), {@code away} (off it) or
     *                       {@code remote} (lender to lender): a lower-case word
     * @param outcome        {@code done}, {@code failed}, ...: a lower-case word
     * @param blockedSeconds how long the job's calls on the vGPU were held, not negative
     * @throws IllegalArgumentException for a label that is not a lower-case word or a negative time
     */
    public void migrationFinished(String direction, String outcome, double blockedSeconds) {
        for (String label : new String[] {direction, outcome}) {
            if (label == null || !WORD.matcher(label).matches()) {
                throw new IllegalArgumentException(
                        "a migration's direction and outcome are lower-case words, got '" + label + "'");
            }
        }
        if (!(blockedSeconds >= 0) || Double.isInfinite(blockedSeconds)) {
            throw new IllegalArgumentException("a migration's blocked time is 0 s or more, got " + blockedSeconds);
        }
        migrations.labelValues(direction, outcome).inc();
        blocked.observe(blockedSeconds);
    }

    /** The registry a scrape reads; for tests and for serving. */
    public PrometheusRegistry registry() {
        return registry;
    }

    /**
     * Serves {@code /metrics} (Prometheus' text format, or OpenMetrics when asked) on {@code listen}, with
     * {@link MetricsHttpServer.Limits#defaults()}.
     *
     * @throws NetworkException when the address cannot be bound (in use, not this machine's)
     */
    public MetricsHttpServer serve(Endpoint listen) {
        return MetricsHttpServer.start(listen, registry, MetricsHttpServer.Limits.defaults());
    }
}
