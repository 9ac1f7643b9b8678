package org.vgpu.bench.migration;

import static org.vgpu.bench.migration.BenchFigures.bytes;
import static org.vgpu.bench.migration.BenchFigures.gigabytesPerSecond;
import static org.vgpu.bench.migration.BenchFigures.median;
import static org.vgpu.bench.migration.BenchSettings.ALL_REGION_SIZES;
import static org.vgpu.bench.migration.RawCopies.RAW_COPIES_PER_PROCESS;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * The {@code mem-sync} section: mem-sync's throughput by region size, from fresh and from warmed
 * sources, against raw copies of the same bytes ({@link RawCopies}) and against each warmed
 * source's own raw read, with its two legs apart.
 */
final class MemSyncSection {
    private static final double MEM_SYNC_GOAL = 0.80;
    /** Migrations of a state of 4 KiB regions that warm the app's side of mem-sync before its table. */
    private static final int APP_WARM_UP_MIGRATIONS = 4;
    /** Reads of the whole live state a warmed source serves before it is migrated. */
    static final int WARM_UP_READS = 20;

    private MemSyncSection() {}

    static void measure(Placement placement, BenchSettings settings, PrintStream out, String label) {
        long total = 64L << 20;
        // Each mem-sync trial's source is a worker process of its own, and a process's copies are as fast
        // as the cores it landed on allow (on an H200 VM, five workers' raw copies ran at 3.81 to 4.51 GB/s,
        // while one worker's own copies stay within 4 % of each other): the baseline samples as many
        // processes as a row.
        // [leg][way][process]: the source's device->host and the target's host->device, each as one
        // copy and as pieces, by the median of that process's copies
        double[][][] rawByProcess = new double[2][2][settings.trials()];
        for (int process = 0; process < settings.trials(); process++) {
            double[][][] copies = RawCopies.seconds(placement, total, RAW_COPIES_PER_PROCESS);
            for (int leg = 0; leg < 2; leg++) {
                for (int way = 0; way < 2; way++) {
                    rawByProcess[leg][way][process] = median(copies[leg][way]);
                }
            }
        }
        // A leg's baseline is the faster way by the medians: a per-copy best of two ways would be a
        // best of two noisy draws, and mem-sync gets one draw per trial.
        double[] raw = new double[2];
        for (int leg = 0; leg < 2; leg++) {
            raw[leg] = Math.min(median(rawByProcess[leg][0]), median(rawByProcess[leg][1]));
        }
        double slowerLeg = total / Math.max(raw[0], raw[1]);
        double serial = total / (raw[0] + raw[1]);
        out.printf(
                "%nmem-sync of %d MiB by region size vs raw copies of one %d MiB region through pinned memory"
                        + " (each leg the faster of one copy and %d MiB pieces on %d streams)%s%n",
                total >> 20,
                total >> 20,
                placement.config().chunkBytes() >> 20,
                placement.config().stagingBuffers(),
                label);
        out.printf(
                "  raw: source device->host %.2f GB/s, target host->device %.2f GB/s; slower leg %.2f GB/s,"
                        + " one after the other %.2f GB/s%n",
                total / raw[0] / 1e9, total / raw[1] / 1e9, slowerLeg / 1e9, serial / 1e9);
        out.printf(
                "  raw by worker process (each way the median of %d copies; the faster way by its median counts), GB/s:"
                        + " source device->host one copy %s, pieces %s; target host->device one copy %s, pieces %s%n",
                RAW_COPIES_PER_PROCESS,
                gigabytesPerSecond(total, rawByProcess[0][0]),
                gigabytesPerSecond(total, rawByProcess[0][1]),
                gigabytesPerSecond(total, rawByProcess[1][0]),
                gigabytesPerSecond(total, rawByProcess[1][1]));
        // A job's first migration also runs the app's side of mem-sync (batching, the requests, the
        // target's scatter) before the JIT has compiled it: loops over thousands of regions run in the
        // interpreter until they have run tens of thousands of times. Shown on its own, so that the rows
        // below differ only in the source.
        for (long firstSize : ALL_REGION_SIZES) {
            StringBuilder firsts = new StringBuilder();
            for (int migration = 0; migration < APP_WARM_UP_MIGRATIONS; migration++) {
                MemSyncTrial trial = memSyncTrial(placement, firstSize, (int) (total / firstSize), false);
                if (trial == null) {
                    break;
                }
                double bandwidth = total / trial.memSyncSeconds();
                firsts.append(String.format(
                        "%s%.3f ms (%.3f)",
                        firsts.isEmpty() ? "" : ", ", trial.memSyncSeconds() * 1e3, bandwidth / slowerLeg));
            }
            if (!firsts.isEmpty()) {
                out.printf(
                        "  this process's first %d mem-syncs, %d regions of %s from fresh sources (a job's first migration:"
                                + " the app's side not yet compiled by the JIT), time (/ slower leg): %s%n",
                        APP_WARM_UP_MIGRATIONS, total / firstSize, bytes(firstSize), firsts);
                break;
            }
        }
        // A fresh source has done nothing yet, a warmed one has served reads of its whole state before (a
        // worker that has served its job a while, its copy paths compiled by the JIT): both are shown. Their
        // trials alternate, so the app's side is as warm for one as for the other.
        // by region size: the fresh trials, then the warmed ones; null where the regions do not fit the device
        Map<Long, MemSyncTrial[][]> bySize = new LinkedHashMap<>();
        for (long size : settings.regionSizes()) {
            int regions = (int) (total / size);
            MemSyncTrial[][] trials = new MemSyncTrial[2][settings.trials()];
            for (int trial = 0; trial < settings.trials() && trials != null; trial++) {
                for (int warmed = 0; warmed < 2 && trials != null; warmed++) {
                    trials[warmed][trial] = memSyncTrial(placement, size, regions, warmed == 1);
                    trials = trials[warmed][trial] == null ? null : trials;
                }
            }
            bySize.put(size, trials);
        }
        for (boolean warmed : new boolean[] {false, true}) {
            out.printf(
                    "  source %s%n",
                    warmed
                            ? "warmed: it served " + WARM_UP_READS + " reads of the whole state first"
                            : "fresh: its first requests are the migration's (a native worker has served only its own warm-up session)");
            out.printf(
                    "  %-12s %9s %12s %11s %14s %12s   %s%n",
                    "region size",
                    "regions",
                    "mem-sync",
                    "GB/s",
                    "/ slower leg",
                    "/ serial",
                    "each trial / slower leg");
            for (Map.Entry<Long, MemSyncTrial[][]> row : bySize.entrySet()) {
                long size = row.getKey();
                int regions = (int) (total / size);
                if (row.getValue() == null) {
                    out.printf(
                            "  %-12s %9d   skipped: the regions would take %d MiB of device memory%n",
                            bytes(size), regions, regions * (VaWindow.GRANULARITY >> 20));
                    continue;
                }
                MemSyncTrial[] trials = row.getValue()[warmed ? 1 : 0];
                double[] eachSeconds = Arrays.stream(trials)
                        .mapToDouble(MemSyncTrial::memSyncSeconds)
                        .toArray();
                double seconds = median(eachSeconds);
                double bandwidth = total / seconds;
                out.printf(
                        "  %-12s %9d %9.3f ms %11.2f %11.3f %s %11.3f   %s%n",
                        bytes(size),
                        regions,
                        seconds * 1e3,
                        bandwidth / 1e9,
                        bandwidth / slowerLeg,
                        bandwidth / slowerLeg >= MEM_SYNC_GOAL ? "  " : " !",
                        bandwidth / serial,
                        Arrays.stream(eachSeconds)
                                .mapToObj(each -> String.format("%.3f", total / each / slowerLeg))
                                .collect(Collectors.joining(" ")));
                if (warmed) {
                    double[] againstOwnRaw = Arrays.stream(trials)
                            .mapToDouble(trial -> trial.ownRawSeconds() / trial.memSyncSeconds())
                            .toArray();
                    double ownRawSeconds = median(Arrays.stream(trials)
                            .mapToDouble(MemSyncTrial::ownRawSeconds)
                            .toArray());
                    double paired = median(againstOwnRaw);
                    out.printf(
                            "  %-12s %9s   / its own source's raw read (%.2f GB/s by median, just before): %.3f %s  each"
                                    + " trial: %s%n",
                            "",
                            "",
                            total / ownRawSeconds / 1e9,
                            paired,
                            paired >= MEM_SYNC_GOAL ? " " : "!",
                            Arrays.stream(againstOwnRaw)
                                    .mapToObj(ratio -> String.format("%.3f", ratio))
                                    .collect(Collectors.joining(" ")));
                    // mem-sync's two legs for this region size alone, to show which one a shortfall comes from
                    double[] scatter = scatterSeconds(placement, size, regions, settings.trials());
                    out.printf(
                            "  %-12s %9s   legs: source gather %.2f GB/s (its last warm-up read), target scatter"
                                    + " %.2f GB/s into fresh allocations, %.2f GB/s again (a local vGPU with the same regions)%n",
                            "",
                            "",
                            total
                                    / median(Arrays.stream(trials)
                                            .mapToDouble(MemSyncTrial::gatherSeconds)
                                            .toArray())
                                    / 1e9,
                            total / scatter[0] / 1e9,
                            total / scatter[1] / 1e9);
                }
            }
        }
        out.printf("  goal: >= %.0f %% of the slower leg (\"!\" marks a miss)%n", MEM_SYNC_GOAL * 100);
    }

    /**
     * One migration's mem-sync time for a state of {@code regions} regions of {@code size} bytes;
     * with {@code warmed}, the source first serves {@link #WARM_UP_READS} reads of the state.
     *
     * @param gatherSeconds the last of those reads; 0 without them
     * @param ownRawSeconds a warmed source's own raw read of as many bytes, just before the migration
     *                      (see {@link #ownRawReadSeconds}); 0 for a fresh one, whose first requests
     *                      must be the migration's
     */
    private record MemSyncTrial(double memSyncSeconds, double gatherSeconds, double ownRawSeconds) {}

    /**
     * The raw read of the worker process that a warmed trial migrates from, so that its mem-sync is
     * also judged against the process it ran in rather than only against others (processes differ by
     * more than the goal's margin): the faster, by median of {@link RawCopies#RAW_COPIES_PER_PROCESS}, of one
     * copy and staging-sized pieces on as many streams as mem-sync has buffers, of a region of
     * {@code bytes}. The region is freed again before the migration, so mem-sync does not copy it.
     */
    private static double ownRawReadSeconds(VirtualGpu gpu, long bytes, MigrationConfig config) {
        long from = gpu.memAlloc(bytes);
        MemorySegment host = gpu.memAllocHost(bytes);
        List<StreamHandle> streams = new ArrayList<>();
        try {
            for (int k = 0; k < config.stagingBuffers(); k++) {
                streams.add(gpu.streamCreate());
            }
            gpu.memsetD8(from, (byte) 1, bytes);
            // untimed: touches the host pages, as mem-sync's staging buffers are touched when pinned
            RawCopies.readSeconds(gpu, from, host, bytes, List.of());
            double[][] seconds = new double[2][RAW_COPIES_PER_PROCESS];
            for (int copy = 0; copy < RAW_COPIES_PER_PROCESS; copy++) {
                seconds[0][copy] = RawCopies.readSeconds(gpu, from, host, bytes, List.of());
                seconds[1][copy] =
                        RawCopies.readSeconds(gpu, from, host, Math.min(bytes, config.chunkBytes()), streams);
            }
            return Math.min(median(seconds[0]), median(seconds[1]));
        } finally {
            streams.forEach(gpu::streamDestroy);
            gpu.memFreeHost(host);
            gpu.memFree(from);
        }
    }

    /** A {@link MemSyncTrial} on a fresh source; null when the regions would take too much of the device. */
    private static MemSyncTrial memSyncTrial(Placement placement, long size, int regions, boolean warmed) {
        try (MigratableGpu gpu = placement.openOnSource(3)) {
            // Every allocation takes at least one mapping granule of device memory.
            if ((long) regions * VaWindow.GRANULARITY > gpu.deviceProperties().totalMemory() / 2) {
                return null;
            }
            List<DeviceRegion> live = new ArrayList<>();
            for (int r = 0; r < regions; r++) {
                long address = gpu.memAlloc(size);
                gpu.memsetD32(address, r, size / 4);
                live.add(new DeviceRegion(address, size));
            }
            double gatherSeconds = warmed
                    ? readBack(gpu, live, WARM_UP_READS, placement.config().chunkBytes())
                    : 0;
            double ownRawSeconds = warmed ? ownRawReadSeconds(gpu, size * regions, placement.config()) : 0;
            return new MemSyncTrial(
                    gpu.migrate(placement.target()).memSync().toNanos() / 1e9, gatherSeconds, ownRawSeconds);
        }
    }

    /**
     * Seconds of scattering {@code regions} regions of {@code size} bytes from pinned memory into a
     * local vGPU on the target device, in batches of one staging chunk as mem-sync does: the first
     * time, into allocations the device has never touched (as a migration's target), then the median
     * of {@code trials} more.
     */
    private static double[] scatterSeconds(Placement placement, long size, int regions, int trials) {
        try (VirtualGpu target = placement.local().open(placement.targetDevice(), VaWindow.forVgpu(5))) {
            List<DeviceRegion> allocated = new ArrayList<>();
            for (int r = 0; r < regions; r++) {
                allocated.add(new DeviceRegion(target.memAlloc(size), size));
            }
            MemorySegment pinned =
                    target.memAllocHost(Math.max(size, placement.config().chunkBytes()));
            List<List<DeviceRegion>> batches = DeviceRegion.runs(allocated, pinned.byteSize(), Integer.MAX_VALUE);
            StreamHandle stream = target.streamCreate();
            try {
                BenchFigures.Measurement scatter = () -> {
                    long start = System.nanoTime();
                    for (List<DeviceRegion> regionsOfBatch : batches) {
                        target.memcpyHtoDScatterAsync(regionsOfBatch, pinned, stream);
                    }
                    target.streamSynchronize(stream);
                    return (System.nanoTime() - start) / 1e9;
                };
                double first = scatter.take();
                return new double[] {first, median(trials, scatter)};
            } finally {
                target.streamDestroy(stream);
                target.memFreeHost(pinned);
            }
        }
    }

    /**
     * Reads {@code regions} back {@code times} times, in gathers of one staging chunk or one region,
     * whichever is larger; returns the seconds of the last time.
     */
    private static double readBack(VirtualGpu gpu, List<DeviceRegion> regions, int times, long chunkBytes) {
        long largest = regions.stream().mapToLong(DeviceRegion::bytes).max().orElse(0);
        MemorySegment host = gpu.memAllocHost(Math.max(largest, chunkBytes));
        List<List<DeviceRegion>> batches = DeviceRegion.runs(regions, host.byteSize(), Integer.MAX_VALUE);
        try {
            long start = 0;
            for (int time = 0; time < times; time++) {
                start = System.nanoTime();
                for (List<DeviceRegion> batch : batches) {
                    gpu.memcpyDtoHGatherAsync(host, batch, StreamHandle.DEFAULT);
                    gpu.ctxSynchronize();
                }
            }
            return (System.nanoTime() - start) / 1e9;
        } finally {
            gpu.memFreeHost(host);
        }
    }
}
