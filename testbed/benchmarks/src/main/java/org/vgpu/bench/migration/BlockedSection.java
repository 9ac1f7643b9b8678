package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.bytes;

import java.io.PrintStream;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationReport;

/** The {@code blocked} section: how long the app is blocked by the migration of a given live state. */
final class BlockedSection {
    private BlockedSection() {}

    static void measure(Placement placement, long liveBytes, PrintStream out, String label) {
        long region = Math.min(liveBytes, 64L << 20);
        try (MigratableGpu gpu = placement.openOnSource(6)) {
            for (long placed = 0; placed < liveBytes; placed += region) {
                long bytes = Math.min(region, liveBytes - placed);
                gpu.memsetD8(gpu.memAlloc(bytes), (byte) (placed >> 20), bytes);
            }
            MigrationReport report = gpu.migrate(placement.target());
            out.printf(
                    "%napp blocked by the migration of %s of live state in %d regions%s%n  %s%n",
                    bytes(liveBytes), report.memSyncRegions(), label, report.summary());
        }
    }
}
