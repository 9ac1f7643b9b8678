package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.bytes;
import static org.vgpu.bench.migration.BenchFigures.median;

import java.io.PrintStream;
import java.util.Locale;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationReport;

/**
 * The {@code blocked} section: how long the app is blocked by the migration of a given live state, against the goal
 * that a move home costs a fixed {@value #FIXED_SECONDS} s plus its bytes at 90 % of the bulk rate measured in the
 * same run (the slower of the source's device-to-host and the target's host-to-device raw copies, as mem-sync's
 * baseline is).
 */
final class BlockedSection {
    static final double FIXED_SECONDS = 0.1;
    static final double RATE_SHARE = 0.9;
    /** Large enough for a steady rate, small enough that the baseline does not double an 8 GiB run's memory. */
    private static final long BASELINE_BYTES = 256L << 20;

    private BlockedSection() {}

    static void measure(Placement placement, long liveBytes, PrintStream out, String label) {
        long baselineBytes = Math.min(liveBytes, BASELINE_BYTES);
        double bulkRate = slowerLegBytesPerSecond(placement, baselineBytes);
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
            out.println("  " + goalLine(report.blocked().toNanos() / 1e9, liveBytes, bulkRate, baselineBytes));
        }
    }

    /** The goal's row: the blocked time against {@value #FIXED_SECONDS} s + bytes / (0.9 x the bulk rate). */
    static String goalLine(double blockedSeconds, long liveBytes, double bulkBytesPerSecond, long baselineBytes) {
        double goalSeconds = FIXED_SECONDS + liveBytes / (RATE_SHARE * bulkBytesPerSecond);
        return String.format(
                Locale.ROOT,
                "goal: blocked %.3f s <= %.1f s + %s / (%.1f x %.2f GB/s, the slower raw leg of %s measured just before)"
                        + " = %.3f s: %s (%.2f of the goal)",
                blockedSeconds,
                FIXED_SECONDS,
                bytes(liveBytes),
                RATE_SHARE,
                bulkBytesPerSecond / 1e9,
                bytes(baselineBytes),
                goalSeconds,
                blockedSeconds <= goalSeconds ? "met" : "NOT met",
                blockedSeconds / goalSeconds);
    }

    /** The slower leg's rate: each leg by the faster of its two ways, by the median of three copies. */
    private static double slowerLegBytesPerSecond(Placement placement, long bytes) {
        double[][][] seconds = RawCopies.seconds(placement, bytes, RawCopies.RAW_COPIES_PER_PROCESS);
        double slowerLegSeconds = 0;
        for (double[][] leg : seconds) {
            slowerLegSeconds = Math.max(slowerLegSeconds, Math.min(median(leg[0]), median(leg[1])));
        }
        return bytes / slowerLegSeconds;
    }
}
