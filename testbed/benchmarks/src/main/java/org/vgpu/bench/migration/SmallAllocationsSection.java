package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.bytes;
import static org.vgpu.bench.migration.BenchFigures.median;
import static org.vgpu.bench.migration.BenchSettings.SMALL_COPY;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * The {@code small-allocs} section: the device memory of many small allocations through vgpu against
 * plain cuMemAlloc, and the app's blocked time when a vGPU holding them migrates.
 */
final class SmallAllocationsSection {
    /** A state of many small buffers: 10,000 allocations of 4 KiB. */
    private static final int SMALL_ALLOCATIONS = 10_000;

    private static final double SMALL_BLOCKED_GOAL_MILLIS = 50;

    private SmallAllocationsSection() {}

    /**
     * What 10,000 allocations of 4 KiB cost: device memory through vgpu (they share 2 MiB chunks)
     * against the same allocations made with plain cuMemAlloc in this run, and the app's blocked time
     * when a vGPU holding them (each written, checked after the move) migrates to the local device
     * and to a worker process.
     */
    static void measure(Placement placement, BenchSettings settings, PrintStream out, String label) {
        int device = placement.targetDevice();
        long viaVgpu;
        try (VirtualGpu gpu = placement.local().open(device, VaWindow.forVgpu(8))) {
            long free = gpu.memGetInfo().free();
            for (int i = 0; i < SMALL_ALLOCATIONS; i++) {
                gpu.memAlloc(SMALL_COPY);
            }
            viaVgpu = free - gpu.memGetInfo().free();
        }
        out.printf(
                "%n%d allocations of %s, device memory used (cuMemGetInfo before and after)%s%n",
                SMALL_ALLOCATIONS, bytes(SMALL_COPY), label);
        out.printf(
                "  %-40s %10.1f MiB%n",
                "vgpu (" + placement.local().name() + " device " + device + ")", viaVgpu / 1048576.0);
        if (placement.local().isEmulation()) {
            out.printf("  %-40s %s%n", "plain cuMemAlloc", "no baseline: no GPU under the emulation");
        } else {
            long plain = PlainCuMemAlloc.memoryUsed(device, SMALL_ALLOCATIONS, SMALL_COPY);
            out.printf("  %-40s %10.1f MiB%n", "plain cuMemAlloc, same device", plain / 1048576.0);
            out.printf("  %-40s %10.3f%n", "ratio vgpu / plain cuMemAlloc", (double) viaVgpu / Math.max(1, plain));
        }

        out.printf(
                "%napp blocked by the migration of %d allocations of %s (%s live, each written and checked after the"
                        + " move; vGPUs start in %s; median of %d after one warm-up migration; goal <= %.0f ms)%s%n",
                SMALL_ALLOCATIONS,
                bytes(SMALL_COPY),
                bytes(SMALL_ALLOCATIONS * SMALL_COPY),
                placement instanceof WorkerPlacement
                        ? "worker processes"
                        : placement.local().name() + " device 0",
                settings.trials(),
                SMALL_BLOCKED_GOAL_MILLIS,
                label);
        // the replay ahead runs before the lock, while the app goes on: not part of the blocked time
        out.printf(
                "  %-44s %10s %10s %10s %13s %s%n", "target", "blocked", "replay", "mem-sync", "replay ahead", "data");
        smallStateRow(
                placement.local().name() + " device " + device, placement, placement::target, true, settings, out);
        if (placement instanceof WorkerPlacement workers) {
            smallStateRow("a worker process", placement, workers::workerTarget, false, settings, out);
        } else {
            out.printf("  %-44s with --source worker only%n", "a worker process");
        }
    }

    private static void smallStateRow(
            String name,
            Placement placement,
            Supplier<MigrationTarget> targets,
            boolean warmUp,
            BenchSettings settings,
            PrintStream out) {
        double[] blocked = new double[settings.trials()];
        double[] replay = new double[settings.trials()];
        double[] memSync = new double[settings.trials()];
        double[] ahead = new double[settings.trials()];
        boolean intact = true;
        String first = "";
        for (int trial = warmUp ? -1 : 0; trial < settings.trials(); trial++) {
            SmallStateMove move = moveSmallState(placement, targets.get());
            intact &= move.intact();
            if (trial < 0) {
                first = String.format(
                        " (warm-up, the process's first: %.1f)",
                        move.report().blocked().toNanos() / 1e6);
            } else {
                blocked[trial] = move.report().blocked().toNanos() / 1e6;
                replay[trial] = move.report().replay().toNanos() / 1e6;
                memSync[trial] = move.report().memSync().toNanos() / 1e6;
                ahead[trial] = move.report().replayAhead().toNanos() / 1e6;
            }
        }
        out.printf(
                "  %-44s %7.3f ms %7.3f ms %7.3f ms %10.3f ms %s%n",
                name, median(blocked), median(replay), median(memSync), median(ahead), intact ? "intact" : "DIFFERS");
        // in order, so that a trend over the process's first migrations (the JIT still compiling) shows
        StringBuilder trials = new StringBuilder();
        for (int trial = 0; trial < blocked.length; trial++) {
            trials.append(String.format(" %.1f (%.1f, %.1f)", blocked[trial], replay[trial], memSync[trial]));
        }
        out.printf("  %-44s%s%s%n", "  each trial, ms: blocked (replay, mem-sync)", trials, first);
    }

    private record SmallStateMove(MigrationReport report, boolean intact) {}

    private static SmallStateMove moveSmallState(Placement placement, MigrationTarget target) {
        try (MigratableGpu gpu = placement.openOnSource(8);
                Arena arena = Arena.ofConfined()) {
            List<DeviceRegion> allocations = new ArrayList<>(SMALL_ALLOCATIONS);
            for (int i = 0; i < SMALL_ALLOCATIONS; i++) {
                allocations.add(new DeviceRegion(gpu.memAlloc(SMALL_COPY), SMALL_COPY));
            }
            MemorySegment written = arena.allocate(SMALL_ALLOCATIONS * SMALL_COPY, 64);
            for (long word = 0; word < written.byteSize() / Long.BYTES; word++) {
                written.setAtIndex(ValueLayout.JAVA_LONG, word, word * 0x9E3779B97F4A7C15L);
            }
            gpu.memcpyHtoDScatterAsync(allocations, written, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            MigrationReport report = gpu.migrate(target);
            MemorySegment read = arena.allocate(written.byteSize(), 64);
            gpu.memcpyDtoHGatherAsync(read, allocations, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            return new SmallStateMove(report, read.mismatch(written) == -1);
        }
    }
}
