package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.median;

import java.io.PrintStream;

import org.vgpu.migration.GateCost;

/** The {@code lock} section: the migration lock alone against its alternatives, per call per thread. */
final class LockSection {
    private LockSection() {}

    static void measure(BenchSettings settings, PrintStream out) {
        int cores = Runtime.getRuntime().availableProcessors();
        int many = Math.max(2, Math.min(4, cores));
        long calls = 100L * settings.iterations();
        out.printf(
                "%nmigration lock alone, ns per call per thread (median of %d after a warm-up; %d cores)%n",
                settings.trials(), cores);
        out.printf("  %-52s %10s %10s%n", "scheme", "1 thread", many + " threads");
        for (GateCost.Scheme scheme : GateCost.Scheme.values()) {
            GateCost.nanosPerCall(scheme, many, calls);
            double one = median(settings.trials(), () -> GateCost.nanosPerCall(scheme, 1, calls));
            double contended = median(settings.trials(), () -> GateCost.nanosPerCall(scheme, many, calls));
            out.printf("  %-52s %10.1f %10.1f%n", scheme.description(), one, contended);
        }
    }
}
