package org.vgpu.bench.migration;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongConsumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.bench.Medians;
import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.ConfigException;
import org.vgpu.migration.GateCost;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrateAfterLaunches;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.Transcript;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.workloads.LennardJonesWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * {@code vgpu migration-bench}: what migration costs, each figure next to a baseline measured in the
 * same run: the migration lock alone against its alternatives; the wrapper's cost per call before
 * and after a migration against the backend called directly; replay time against the number of
 * recorded calls; mem-sync throughput against raw copies, by region size; the app's blocked time
 * for a given live state; an MD app (back-to-back Lennard-Jones runs) migrated by a thread of its
 * own, as the agent migrates, at 25/50/75 % of its launches against the app never moved.
 * Measurements, never assertions.
 *
 * <p>{@code --source local} moves vGPUs between two devices of the local backend (the emulation
 * only: native to native in one process is refused, see {@link org.vgpu.migration.NodeTargetResolver});
 * {@code --source worker} starts each vGPU in its own GPU worker process on loopback, as a lender
 * would, and moves it to a local device: remote to native on a GPU machine, the mission.
 *
 * <p>Under the CPU emulation every section says so: it shows the wrapper's own costs and the
 * protocol's shape, not GPU or network speed (its "asynchronous" copies run on the calling thread,
 * so nothing overlaps, and its device memory is zero-filled host memory, so mapping it costs time).
 */
public final class MigrationBenchCommand implements Subcommand {
    private static final double PER_CALL_GOAL = 1.01;
    private static final List<String> SECTIONS =
            List.of("lock", "per-call", "replay", "mem-sync", "blocked", "small-allocs", "md");
    /**
     * Trials by default and with {@code --full}. With {@code --source worker} every mem-sync and MD
     * trial starts a worker process of its own (a JVM, a CUDA context and the worker's warm-up: several
     * seconds on an H100), which is what a section's time goes to: the defaults keep each section
     * within a few minutes, {@code --full} gives the complete tables of docs/migration-bench.md, whose
     * mem-sync table alone runs past 10 minutes.
     */
    private static final int DEFAULT_TRIALS = 3;

    private static final int FULL_TRIALS = 7;
    /** The mem-sync table's region sizes: the small regions the copy kernels pack, and regions cut in chunks. */
    private static final long[] REGION_SIZES = {4L << 10, 64L << 20};

    private static final long[] ALL_REGION_SIZES = {4L << 10, 64L << 10, 1L << 20, 16L << 20, 64L << 20};
    /** Replay against calls made: two counts three decades apart show it flat. */
    private static final int[] REPLAY_CALLS = {1_000, 1_000_000};

    private static final int[] ALL_REPLAY_CALLS = {1_000, 10_000, 100_000, 1_000_000};
    /** Replay against live objects: two counts show it growing with them. */
    private static final int[] REPLAY_LIVE_OBJECTS = {100, 1_000};

    private static final int[] ALL_REPLAY_LIVE_OBJECTS = {100, 1_000, 10_000};
    /**
     * Per-call figures are ratios of two loops of a few milliseconds each, timed back to back; pairs
     * are cheap, and a median over many of them keeps a busy moment of the machine from deciding a
     * figure of 1 %.
     */
    private static final int PAIRS_PER_TRIAL = 5;

    private static final double MEM_SYNC_GOAL = 0.80;
    /** Migrations of a state of 4 KiB regions that warm the app's side of mem-sync before its table. */
    private static final int APP_WARM_UP_MIGRATIONS = 4;
    /** Reads of the whole live state a warmed source serves before it is migrated. */
    private static final int WARM_UP_READS = 20;
    /** Timed raw copies of each leg in each worker process that the raw baseline samples. */
    private static final int RAW_COPIES_PER_PROCESS = 3;

    private static final long SMALL_COPY = 4096;
    /** Budget of each emulated device: the emulation charges device memory as a GPU's chunks take it. */
    private static final long EMULATED_DEVICE_BUDGET = 200L << 30;

    @Override
    public String name() {
        return "migration-bench";
    }

    @Override
    public String summary() {
        return "measure migration: lock and wrapper cost per call, replay, mem-sync, blocked time, MD migrated mid-run";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(Option.builder()
                        .longOpt("backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("the local backend: emulated (default, two emulated devices) or native")
                        .get())
                .addOption(Option.builder()
                        .longOpt("sections")
                        .hasArg()
                        .argName("LIST")
                        .desc("comma-separated sections to measure, of " + SECTIONS + " (default all)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("trials")
                        .hasArg()
                        .argName("N")
                        .desc("timed trials per figure, median reported (default " + DEFAULT_TRIALS + ", with --full "
                                + FULL_TRIALS + "; per call, " + PAIRS_PER_TRIAL + " interleaved pairs per trial)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("full")
                        .desc("the complete tables: " + FULL_TRIALS + " trials, mem-sync at every region size of "
                                + bytes(ALL_REGION_SIZES[0]) + " to "
                                + bytes(ALL_REGION_SIZES[ALL_REGION_SIZES.length - 1])
                                + ", replay at every call and live-object count (with --source worker, the mem-sync"
                                + " table alone takes over 10 minutes on a GPU machine)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("iterations")
                        .hasArg()
                        .argName("N")
                        .desc("calls per per-call trial (default 20000 native, 500000 emulated; copies a tenth)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("live-mib")
                        .hasArg()
                        .argName("MIB")
                        .desc("live state for the blocked-time figure (default 1024)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("large")
                        .desc("also measure the blocked time for 8 GiB of live state")
                        .get())
                .addOption(Option.builder()
                        .longOpt("md-scale")
                        .hasArg()
                        .argName("N")
                        .desc("Lennard-Jones workload scale (default 2)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("md-runs")
                        .hasArg()
                        .argName("N")
                        .desc(
                                "back-to-back Lennard-Jones runs that make the MD app (default 200 native, about 1.7 s from a"
                                        + " remote GPU; 4 emulated)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("source")
                        .hasArg()
                        .argName("WHERE")
                        .desc(
                                "where migrated vGPUs start: local (default; emulated device 0) or worker (a GPU worker process"
                                        + " per vGPU on loopback, the remote-to-local mission; required for native)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("worker-device")
                        .hasArg()
                        .argName("N")
                        .desc("device of the worker processes (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("target-device")
                        .hasArg()
                        .argName("N")
                        .desc("local device the vGPUs move to with --source worker (default 0)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("staging-buffers")
                        .hasArg()
                        .argName("N")
                        .desc("mem-sync's staging buffers, 1 to 8 (default " + MigrationConfig.DEFAULT_STAGING_BUFFERS
                                + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("chunk-mib")
                        .hasArg()
                        .argName("MIB")
                        .desc("mem-sync's staging buffer size in MiB, 1 to 1024 (default "
                                + (MigrationConfig.DEFAULT_CHUNK_BYTES >> 20) + ")")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        String backendName =
                CommandLines.choice(line, "backend", EmulatedBackend.NAME, List.of(EmulatedBackend.NAME, "native"));
        String source = CommandLines.choice(line, "source", "local", List.of("local", "worker"));
        Set<String> sections = CommandLines.choices(line, "sections", SECTIONS);
        boolean full = line.hasOption("full");
        Settings settings = new Settings(
                full,
                CommandLines.intValue(line, "trials", full ? FULL_TRIALS : DEFAULT_TRIALS, 1),
                // An emulated launch takes tens of nanoseconds, a native one microseconds: trials of similar length.
                CommandLines.intValue(
                        line, "iterations", backendName.equals(EmulatedBackend.NAME) ? 500_000 : 20_000, 100),
                CommandLines.intValue(line, "live-mib", 1024, 1),
                line.hasOption("large"),
                CommandLines.intValue(line, "md-scale", 2, 1),
                // Long enough that a migration's fixed costs are small beside the app's run, as in a real MD job.
                CommandLines.intValue(line, "md-runs", backendName.equals(EmulatedBackend.NAME) ? 4 : 200, 1));
        int workerDevice = CommandLines.intValue(line, "worker-device", 0, 0);
        int targetDevice = CommandLines.intValue(line, "target-device", 0, 0);
        int stagingBuffers = CommandLines.intValue(line, "staging-buffers", MigrationConfig.DEFAULT_STAGING_BUFFERS, 1);
        int chunkMib = CommandLines.intValue(line, "chunk-mib", (int) (MigrationConfig.DEFAULT_CHUNK_BYTES >> 20), 1);
        MigrationConfig config;
        try {
            config = MigrationConfig.DEFAULTS.withStagingBuffers(stagingBuffers).withChunkBytes((long) chunkMib << 20);
        } catch (ConfigException outOfRange) {
            throw new ParseException("--staging-buffers / --chunk-mib: " + outOfRange.detail());
        }
        try (GpuBackend backend = backendName.equals(EmulatedBackend.NAME)
                ? new EmulatedBackend(2, EMULATED_DEVICE_BUDGET, TestKernels.twins())
                : Backends.open(backendName)) {
            if (targetDevice >= backend.deviceCount() || (source.equals("local") && backend.deviceCount() < 2)) {
                throw new ParseException("--target-device must be < " + backend.deviceCount()
                        + " and --source local needs" + " two devices of the backend");
            }
            String label = backend.isEmulation()
                    ? "  [CPU EMULATION: not a GPU; shows the wrapper's and protocol's own costs]"
                    : "";
            out.printf(
                    "vgpu migration-bench on %s; Java %s%n%s%n",
                    backend.deviceProperties(0).describe(), Runtime.version(), label);
            if (sections.contains("lock")) {
                gateCost(settings, out);
            }
            if (sections.contains("per-call")) {
                perCall(
                        LocalPlacement.migratable(backend, 0, 0, config),
                        backend.open(0, VaWindow.forVgpu(1)),
                        null,
                        settings,
                        out);
            }
            if (source.equals("local") && !backend.isEmulation()) {
                out.printf(
                        "%nmigration figures skipped: native to native in one process is refused; use --source worker%n");
                return 0;
            }
            try (Placement placement = source.equals("local")
                    ? new LocalPlacement(backend, config)
                    : new WorkerPlacement(backend, backendName, workerDevice, targetDevice, config)) {
                out.printf("%nmigrations: %s%n", placement.describe());
                if (sections.contains("per-call")) {
                    perCall(
                            placement.openOnSource(0),
                            backend.open(placement.targetDevice(), VaWindow.forVgpu(1)),
                            placement.target(),
                            settings,
                            out);
                }
                if (sections.contains("replay")) {
                    replay(placement, settings, out, label);
                }
                if (sections.contains("mem-sync")) {
                    memSync(placement, settings, out, label);
                }
                if (sections.contains("blocked")) {
                    blocked(placement, settings.liveMib() * (1L << 20), out, label);
                    if (settings.large()) {
                        blocked(placement, 8L << 30, out, label);
                    }
                }
                if (sections.contains("small-allocs")) {
                    smallAllocations(placement, settings, out, label);
                }
                if (sections.contains("md")) {
                    md(placement, settings, out, label);
                }
            }
        }
        return 0;
    }

    private record Settings(
            boolean full, int trials, int iterations, int liveMib, boolean large, int mdScale, int mdRuns) {
        long[] regionSizes() {
            return full ? ALL_REGION_SIZES : REGION_SIZES;
        }

        int[] replayCalls() {
            return full ? ALL_REPLAY_CALLS : REPLAY_CALLS;
        }

        int[] replayLiveObjects() {
            return full ? ALL_REPLAY_LIVE_OBJECTS : REPLAY_LIVE_OBJECTS;
        }
    }

    // ---- the lock alone

    private static void gateCost(Settings settings, PrintStream out) {
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

    // ---- per call

    /**
     * The wrapper's cost per call against {@code direct}, a backend's own vGPU; with a {@code target},
     * after the wrapper has migrated there (and {@code direct} is on the target's device).
     */
    private static void perCall(
            MigratableGpu wrapper, VirtualGpu direct, MigrationTarget target, Settings settings, PrintStream out) {
        try (wrapper;
                direct) {
            // Set up before the migration, so the wrapper's handles and buffers are ones the replay remapped.
            LongConsumer directLaunches = launches(direct);
            LongConsumer wrapperLaunches = launches(wrapper);
            LongConsumer directCopies = smallCopies(direct);
            LongConsumer wrapperCopies = smallCopies(wrapper);
            if (target != null) {
                wrapper.migrate(target);
            }
            out.printf(
                    "%nper call, %s vs the backend directly (medians of %d interleaved pairs of loops; goal <= %.2f)%n",
                    target != null ? "after a migration, wrapper" : "wrapper recording (before any migration)",
                    settings.trials() * PAIRS_PER_TRIAL,
                    PER_CALL_GOAL);
            out.printf("  %-40s %12s %12s %8s %8s%n", "operation", "backend", "wrapper", "ratio", "range");
            compare(
                    "empty kernel launch, async",
                    settings,
                    settings.iterations(),
                    directLaunches,
                    wrapperLaunches,
                    out);
            compare("4 KiB host->device copy", settings, settings.iterations() / 10, directCopies, wrapperCopies, out);
        }
    }

    private static LongConsumer launches(VirtualGpu gpu) {
        FunctionHandle empty = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
        Dim3 one = Dim3.of(1);
        return count -> {
            for (long i = 0; i < count; i++) {
                gpu.launchKernel(empty, one, one, 0, StreamHandle.DEFAULT, KernelArgs.none());
            }
            gpu.ctxSynchronize();
        };
    }

    private static LongConsumer smallCopies(VirtualGpu gpu) {
        long device = gpu.memAlloc(SMALL_COPY);
        MemorySegment host = MemorySegment.ofArray(new byte[(int) SMALL_COPY]);
        return count -> {
            for (long i = 0; i < count; i++) {
                gpu.memcpyHtoD(device, host, SMALL_COPY);
            }
        };
    }

    /**
     * Times {@code direct} and {@code wrapper} in pairs, each pair back to back in alternating order,
     * and prints the median of each and the median of the pairs' ratios (a pair shares the machine's
     * moment, so drift between pairs cancels), with the middle half of the ratios as the range.
     */
    private static void compare(
            String name,
            Settings settings,
            int repetitions,
            LongConsumer direct,
            LongConsumer wrapper,
            PrintStream out) {
        for (int warmUp = 0; warmUp < 2; warmUp++) {
            direct.accept(repetitions);
            wrapper.accept(repetitions);
        }
        int pairs = settings.trials() * PAIRS_PER_TRIAL;
        double[] directNanos = new double[pairs];
        double[] wrapperNanos = new double[pairs];
        double[] ratios = new double[pairs];
        for (int pair = 0; pair < pairs; pair++) {
            if (pair % 2 == 0) {
                directNanos[pair] = nanosPer(direct, repetitions);
                wrapperNanos[pair] = nanosPer(wrapper, repetitions);
            } else {
                wrapperNanos[pair] = nanosPer(wrapper, repetitions);
                directNanos[pair] = nanosPer(direct, repetitions);
            }
            ratios[pair] = wrapperNanos[pair] / directNanos[pair];
        }
        double[] sortedRatios = ratios.clone();
        Arrays.sort(sortedRatios);
        out.printf(
                "  %-40s %9.3f us %9.3f us %8.3f %s%n",
                name,
                median(directNanos) / 1e3,
                median(wrapperNanos) / 1e3,
                median(ratios),
                String.format("%.3f-%.3f", sortedRatios[pairs / 4], sortedRatios[(pairs - 1) * 3 / 4]));
    }

    private static double nanosPer(LongConsumer body, int repetitions) {
        long start = System.nanoTime();
        body.accept(repetitions);
        return (double) (System.nanoTime() - start) / repetitions;
    }

    // ---- replay

    /**
     * Replay against the app's call count (the log keeps live state only, so it should not grow) and
     * against the live state (one replayed call per live object, so it grows with it).
     */
    private static void replay(Placement placement, Settings settings, PrintStream out, String label) {
        out.printf(
                "%nreplay time (target opened, every live object recreated) vs calls the app made;"
                        + " live state: 1 module, 4 functions, 2 streams, 2 events, 16 allocations (goal: flat, <= 50 ms);"
                        + " ahead of the lock while the app runs, then under it what changed since%s%n",
                label);
        out.printf("  %-34s %12s %12s%n", "calls made", "ahead", "under lock");
        for (int calls : settings.replayCalls()) {
            try (MigratableGpu gpu = placement.openOnSource(2)) {
                FunctionHandle empty = null;
                var module = gpu.moduleLoadData(TestKernels.ptx());
                for (String kernel : List.of(
                        TestKernels.EMPTY_KERNEL,
                        TestKernels.SAXPY,
                        TestKernels.VECTOR_ADD,
                        TestKernels.POINTER_CHASE)) {
                    FunctionHandle function = gpu.moduleGetFunction(module, kernel);
                    empty = kernel.equals(TestKernels.EMPTY_KERNEL) ? function : empty;
                }
                for (int i = 0; i < 2; i++) {
                    gpu.streamCreate();
                    gpu.eventCreate();
                }
                for (int i = 0; i < 16; i++) {
                    gpu.memAlloc(SMALL_COPY);
                }
                // The rest of the calls: launches, allocations freed again and repeated kernel lookups (churn
                // the log must not keep).
                int made = 29;
                Dim3 one = Dim3.of(1);
                while (made < calls) {
                    if (made % 100 == 0) {
                        gpu.memFree(gpu.memAlloc(SMALL_COPY));
                        gpu.moduleGetFunction(module, TestKernels.SAXPY);
                        made += 3;
                    } else {
                        gpu.launchKernel(empty, one, one, 0, StreamHandle.DEFAULT, KernelArgs.none());
                        made++;
                    }
                }
                gpu.ctxSynchronize();
                MigrationReport report = gpu.migrate(placement.target());
                out.printf(
                        "  %-34d %9.3f ms %9.3f ms%n",
                        calls,
                        report.replayAhead().toNanos() / 1e6,
                        report.replay().toNanos() / 1e6);
            }
        }
        out.printf("  replay time vs live objects (grows with them, not with calls)%n");
        out.printf("  %-34s %12s %14s %12s%n", "live objects", "ahead", "per object", "under lock");
        for (int count : settings.replayLiveObjects()) {
            try (MigratableGpu gpu = placement.openOnSource(2)) {
                for (int i = 0; i < count; i++) {
                    gpu.memAlloc(SMALL_COPY);
                }
                printReplay(count + " allocations of 4 KiB", gpu.migrate(placement.target()), count, out);
            }
            try (MigratableGpu gpu = placement.openOnSource(2)) {
                for (int i = 0; i < count / 2; i++) {
                    gpu.streamCreate();
                    gpu.eventCreate();
                }
                printReplay(count + " streams and events", gpu.migrate(placement.target()), count, out);
            }
        }
    }

    private static void printReplay(String what, MigrationReport report, int calls, PrintStream out) {
        double ahead = report.replayAhead().toNanos() / 1e6;
        out.printf(
                "  %-34s %9.3f ms %11.3f us %9.3f ms%n",
                what, ahead, ahead * 1e3 / calls, report.replay().toNanos() / 1e6);
    }

    // ---- mem-sync

    private static void memSync(Placement placement, Settings settings, PrintStream out, String label) {
        long total = 64L << 20;
        // Each mem-sync trial's source is a worker process of its own, and a process's copies are as fast
        // as the cores it landed on allow (on an H200 VM, five workers' raw copies ran at 3.81 to 4.51 GB/s,
        // while one worker's own copies stay within 4 % of each other): the baseline samples as many
        // processes as a row.
        // [leg][way][process]: the source's device->host and the target's host->device, each as one
        // copy and as pieces, by the median of that process's copies
        double[][][] rawByProcess = new double[2][2][settings.trials()];
        for (int process = 0; process < settings.trials(); process++) {
            double[][][] copies = rawCopy(placement, total, RAW_COPIES_PER_PROCESS);
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
     * more than the goal's margin): the faster, by median of {@link #RAW_COPIES_PER_PROCESS}, of one
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
            readSeconds(gpu, from, host, bytes, List.of());
            double[][] seconds = new double[2][RAW_COPIES_PER_PROCESS];
            for (int copy = 0; copy < RAW_COPIES_PER_PROCESS; copy++) {
                seconds[0][copy] = readSeconds(gpu, from, host, bytes, List.of());
                seconds[1][copy] = readSeconds(gpu, from, host, Math.min(bytes, config.chunkBytes()), streams);
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
                Measurement scatter = () -> {
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

    /**
     * Seconds of device-to-host copies on the source and host-to-device copies on the target, as
     * {@code [leg][way][trial]}: leg 0 the source's, 1 the target's; way 0 one synchronous copy, 1
     * staging-sized asynchronous copies spread over as many streams as mem-sync has buffers, with one
     * synchronize per stream (the leg as busy as mem-sync keeps it). The caller takes the faster way:
     * the baseline is the best the leg does alone, not the way mem-sync happens to use it. The source
     * first serves as many reads of the region as a warmed source does, so the baseline is as warm as
     * the warmest mem-sync.
     */
    private static double[][][] rawCopy(Placement placement, long bytes, int trials) {
        try (VirtualGpu source = placement.openPlainOnSource(4);
                VirtualGpu target = placement.local().open(placement.targetDevice(), VaWindow.forVgpu(5))) {
            long from = source.memAlloc(bytes);
            long to = target.memAlloc(bytes);
            source.memsetD8(from, (byte) 1, bytes);
            List<StreamHandle> sourceStreams = new ArrayList<>();
            List<StreamHandle> targetStreams = new ArrayList<>();
            for (int k = 0; k < placement.config().stagingBuffers(); k++) {
                sourceStreams.add(source.streamCreate());
                targetStreams.add(target.streamCreate());
            }
            // Pinned where the native side is, as mem-sync's staging buffers are.
            VirtualGpu pinner = "native".equals(target.backendName()) ? target : source;
            MemorySegment pinned = pinner.memAllocHost(bytes);
            long piece = Math.min(bytes, placement.config().chunkBytes());
            for (int read = 0; read < WARM_UP_READS; read++) {
                source.memcpyDtoH(pinned, from, bytes);
            }
            double[][][] seconds = new double[2][2][trials];
            for (int trial = 0; trial < trials; trial++) {
                double downWhole = readSeconds(source, from, pinned, bytes, List.of());
                long start = System.nanoTime();
                target.memcpyHtoD(to, pinned, bytes);
                long upWhole = System.nanoTime() - start;
                double downPieces = readSeconds(source, from, pinned, piece, sourceStreams);
                start = System.nanoTime();
                for (long offset = 0; offset < bytes; offset += piece) {
                    long length = Math.min(piece, bytes - offset);
                    target.memcpyHtoDAsync(to + offset, pinned.asSlice(offset, length), length, targetStreams.get((int)
                            (offset / piece % targetStreams.size())));
                }
                targetStreams.forEach(target::streamSynchronize);
                long upPieces = System.nanoTime() - start;
                seconds[0][0][trial] = downWhole;
                seconds[0][1][trial] = downPieces;
                seconds[1][0][trial] = upWhole / 1e9;
                seconds[1][1][trial] = upPieces / 1e9;
            }
            pinner.memFreeHost(pinned);
            return seconds;
        }
    }

    /**
     * Seconds of one read of {@code host.byteSize()} bytes at {@code from} on {@code source} into
     * {@code host}: with no streams, one synchronous copy; otherwise asynchronous copies of
     * {@code piece} bytes spread round-robin over {@code streams}, then one synchronize per stream.
     */
    private static double readSeconds(
            VirtualGpu source, long from, MemorySegment host, long piece, List<StreamHandle> streams) {
        long bytes = host.byteSize();
        long start = System.nanoTime();
        if (streams.isEmpty()) {
            source.memcpyDtoH(host, from, bytes);
        } else {
            for (long offset = 0; offset < bytes; offset += piece) {
                long length = Math.min(piece, bytes - offset);
                source.memcpyDtoHAsync(host.asSlice(offset, length), from + offset, length, streams.get((int)
                        (offset / piece % streams.size())));
            }
            streams.forEach(source::streamSynchronize);
        }
        return (System.nanoTime() - start) / 1e9;
    }

    // ---- blocked time

    private static void blocked(Placement placement, long liveBytes, PrintStream out, String label) {
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

    // ---- small allocations

    /** Issue 20's state of many small buffers: 10,000 allocations of 4 KiB. */
    private static final int SMALL_ALLOCATIONS = 10_000;

    private static final double SMALL_BLOCKED_GOAL_MILLIS = 50;

    /**
     * What 10,000 allocations of 4 KiB cost: device memory through vgpu (they share 2 MiB chunks)
     * against the same allocations made with plain cuMemAlloc in this run, and the app's blocked time
     * when a vGPU holding them (each written, checked after the move) migrates to the local device
     * and to a worker process.
     */
    private static void smallAllocations(Placement placement, Settings settings, PrintStream out, String label) {
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
            Settings settings,
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

    // ---- MD migrated mid-run

    /**
     * The MD app: {@code mdRuns} back-to-back runs of the Lennard-Jones workload on one vGPU (a long
     * MD job's successive segments), migrated at 25/50/75 % of its launches against the app never
     * moved, on the source and on the target. The migration runs on a thread of its own, as the
     * agent's does: the app keeps launching while the target is opened and the source released, and
     * waits only while the lock is shut. Each run of a first app, never migrated, is checked against
     * its CPU reference after that app has finished, outside its time: the double-precision rerun of
     * the simulation is most of a run's wall time, and its speed moves by a fifth with the load on the
     * host's other cores (measured on the H200 machines: the app thread's CPU time equals its wall
     * time in each case), which buried the GPU's share. An MD code's own time has no such rerun in
     * it. Every other app must read back the same bits as that one.
     */
    private static void md(Placement placement, Settings settings, PrintStream out, String label) {
        LennardJonesWorkload workload = new LennardJonesWorkload();
        MdRun unmigrated;
        try (MigratableGpu gpu = placement.openOnSource(7)) {
            unmigrated = mdRun(gpu, workload, settings, 0, placement.target(), out, true);
        }
        long launches = unmigrated.launches();
        // Each row: whether the app starts on the target, and after how many launches it moves there (0: never).
        String[] names = {
            "never migrated, on the source",
            "never migrated, on the target",
            "migrated after 25 % of launches",
            "migrated after 50 % of launches",
            "migrated after 75 % of launches"
        };
        boolean[] onTarget = {false, true, false, false, false};
        long[] migrateAfter = {0, 0, launches / 4, launches / 2, launches * 3 / 4};
        double[][] appMillis = new double[names.length][settings.trials()];
        double[][] blockedMillis = new double[names.length][settings.trials()];
        // each row's single runs over all trials, by where they ran relative to the migration
        List<List<List<MdStep>>> steps = new ArrayList<>();
        for (int row = 0; row < names.length; row++) {
            steps.add(List.of(new ArrayList<>(), new ArrayList<>(), new ArrayList<>()));
        }
        // Rounds over all rows, after a warm-up round, so JIT warm-up and drift spread over every row.
        for (int round = -1; round < settings.trials(); round++) {
            for (int row = 0; row < names.length; row++) {
                try (MigratableGpu gpu = onTarget[row]
                        ? LocalPlacement.migratable(placement.local(), 7, placement.targetDevice(), placement.config())
                        : placement.openOnSource(7)) {
                    MdRun run = mdRun(gpu, workload, settings, migrateAfter[row], placement.target(), out, false);
                    if (!run.digest().equals(unmigrated.digest())) {
                        out.printf(
                                "  MD app FAILED: %s read back other bits than the app never migrated%n", names[row]);
                    }
                    if (round >= 0) {
                        appMillis[row][round] = run.millis();
                        blockedMillis[row][round] = run.migration() == null
                                ? 0
                                : run.migration().blocked().toNanos() / 1e6;
                        for (MdStep step : run.steps()) {
                            steps.get(row).get(step.phase().ordinal()).add(step);
                        }
                    }
                }
            }
        }
        out.printf(
                "%nLennard-Jones MD app: %d runs of scale %d back to back, %d launches; migrated by an agent thread"
                        + " while the app runs; the app's time (uploads, launches, read-backs, the waits for the migration),"
                        + " median of %d; each run of a first app, never migrated, checked against its CPU reference after it"
                        + " ended, and every app bit for bit against that one%s%n",
                settings.mdRuns(), settings.mdScale(), launches, settings.trials(), label);
        out.printf("  %-34s %12s %10s %12s %12s%n", "app", "time", "/ source", "/ expected", "app blocked");
        double source = median(appMillis[0]);
        double target = median(appMillis[1]);
        for (int row = 0; row < names.length; row++) {
            double millis = median(appMillis[row]);
            // Moved after a share f of its launches, the app would take f of the source app's time and
            // the rest of the target app's if the migration cost nothing.
            double share = (double) migrateAfter[row] / launches;
            String expected = migrateAfter[row] == 0
                    ? "-"
                    : String.format("%.3f", millis / (share * source + (1 - share) * target));
            String blocked = migrateAfter[row] == 0 ? "-" : String.format("%.2f ms", median(blockedMillis[row]));
            out.printf("  %-34s %9.2f ms %10.3f %12s %12s%n", names[row], millis, millis / source, expected, blocked);
        }
        // Where a migrated app's time goes: its runs before the migration against the app never moved
        // on the source, the runs the migration overlapped (target opened, state copied, source
        // released, all beside the app), and its runs after against the app never moved on the target.
        double sourceRun = MdStep.median(steps.get(0).get(MdPhase.BEFORE.ordinal()));
        double targetRun = MdStep.median(steps.get(1).get(MdPhase.BEFORE.ordinal()));
        out.printf(
                "  one run (of %d), median over runs and trials: never migrated on the source %.2f ms, on the target %.2f ms%n",
                settings.mdRuns(), sourceRun, targetRun);
        for (int row = 2; row < names.length; row++) {
            List<List<MdStep>> phases = steps.get(row);
            double before = MdStep.median(phases.get(MdPhase.BEFORE.ordinal()));
            double after = MdStep.median(phases.get(MdPhase.AFTER.ordinal()));
            List<MdStep> overlapped = phases.get(MdPhase.DURING.ordinal());
            out.printf(
                    "  %-34s before %.2f ms (/ source %.3f); during the migration %.1f runs per trial, %.2f ms each;"
                            + " after %.2f ms (/ target %.3f)%n",
                    names[row],
                    before,
                    before / sourceRun,
                    (double) overlapped.size() / settings.trials(),
                    MdStep.median(overlapped),
                    after,
                    after / targetRun);
        }
        out.printf("  expected: migrated apps between the two, nearer the target the earlier they move;"
                + " / expected: over the mix of the two by the share of launches made before the move%n");
    }

    /**
     * One run of the MD app.
     *
     * @param millis    the app's time: its runs, back to back
     * @param migration the migration's report; null when the app never moved
     */
    private record MdRun(double millis, long launches, String digest, MigrationReport migration, List<MdStep> steps) {}

    /** Where one run of the MD app ran: wholly before its migration started, while it ran, or wholly after it ended. */
    private enum MdPhase {
        BEFORE,
        DURING,
        AFTER
    }

    /** One of the MD app's runs; an app never migrated has only runs BEFORE. */
    private record MdStep(MdPhase phase, double millis) {
        /** The median time of {@code steps}; NaN for none. */
        static double median(List<MdStep> steps) {
            return steps.isEmpty()
                    ? Double.NaN
                    : MigrationBenchCommand.median(
                            steps.stream().mapToDouble(MdStep::millis).toArray());
        }
    }

    /**
     * Runs the MD app, migrated to {@code target} by its own thread after {@code migrateAfter}
     * launches (0: never), then, if asked, checks each of its runs against the CPU reference.
     */
    private static MdRun mdRun(
            MigratableGpu gpu,
            LennardJonesWorkload workload,
            Settings settings,
            long migrateAfter,
            MigrationTarget target,
            PrintStream out,
            boolean checkEachRun) {
        MigrateAfterLaunches trigger = new MigrateAfterLaunches(
                gpu,
                migrateAfter,
                target,
                migration -> Thread.ofPlatform().name("migration agent").start(migration));
        Transcript transcript = new Transcript(trigger);
        List<MdStep> steps = new ArrayList<>();
        // the runs to check once the app has ended
        List<LennardJonesWorkload.Simulation> simulations = new ArrayList<>();
        long start = System.nanoTime();
        for (int run = 0; run < settings.mdRuns(); run++) {
            boolean doneBefore = trigger.migration().isDone();
            long runStart = System.nanoTime();
            LennardJonesWorkload.Simulation simulation = workload.simulate(transcript, settings.mdScale(), run + 1);
            long runNanos = System.nanoTime() - runStart;
            if (checkEachRun) {
                simulations.add(simulation);
            }
            MdPhase phase = doneBefore
                    ? MdPhase.AFTER
                    : migrateAfter == 0 || trigger.launches() < migrateAfter ? MdPhase.BEFORE : MdPhase.DURING;
            steps.add(new MdStep(phase, runNanos / 1e6));
        }
        double millis = (System.nanoTime() - start) / 1e6;
        MigrationReport migration =
                migrateAfter == 0 ? null : trigger.migration().join();
        for (LennardJonesWorkload.Simulation simulation : simulations) {
            WorkloadResult result = workload.check(simulation);
            if (!result.passed()) {
                out.printf("  MD run FAILED its check: %s%n", result.errorSummary());
            }
        }
        return new MdRun(millis, transcript.launches(), transcript.digest(), migration, steps);
    }

    // ---- helpers

    private interface Measurement {
        double take();
    }

    private static double median(int trials, Measurement measurement) {
        double[] values = new double[trials];
        for (int trial = 0; trial < trials; trial++) {
            values[trial] = measurement.take();
        }
        return median(values);
    }

    private static double median(double[] values) {
        return Medians.of(values);
    }

    /** Each of {@code seconds} as the bandwidth of copying {@code bytes}, in GB/s, in trial order. */
    private static String gigabytesPerSecond(long bytes, double[] seconds) {
        return Arrays.stream(seconds)
                .mapToObj(each -> String.format("%.2f", bytes / each / 1e9))
                .collect(Collectors.joining(" "));
    }

    private static String bytes(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        return bytes >= 1L << 20 ? (bytes >> 20) + " MiB" : (bytes >> 10) + " KiB";
    }
}
