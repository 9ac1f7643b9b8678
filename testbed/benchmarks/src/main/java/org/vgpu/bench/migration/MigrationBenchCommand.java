package org.vgpu.bench.migration;

import java.io.PrintStream;
import java.util.List;
import java.util.Set;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.error.ConfigException;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * {@code vgpu migration-bench}: what migration costs, each figure next to a baseline measured in the
 * same run: the migration lock alone against its alternatives; the wrapper's cost per call before
 * and after a migration against the backend called directly; replay time against the number of
 * recorded calls; mem-sync throughput against raw copies, by region size; the app's blocked time
 * for a given live state; an MD app (back-to-back Lennard-Jones runs) migrated by a thread of its
 * own, as the agent migrates, at 25/50/75 % of its launches against the app never moved.
 * Measurements, never assertions. This class reads the options and runs the sections asked for,
 * each a class of its own ({@link LockSection}, {@link PerCallSection}, {@link ReplaySection},
 * {@link MemSyncSection}, {@link BlockedSection}, {@link SmallAllocationsSection}, {@link MdSection}).
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
                                + FULL_TRIALS + "; per call, " + PerCallSection.PAIRS_PER_TRIAL
                                + " interleaved pairs per trial)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("full")
                        .desc("the complete tables: " + FULL_TRIALS + " trials, mem-sync at every region size of "
                                + BenchFigures.bytes(BenchSettings.ALL_REGION_SIZES[0]) + " to "
                                + BenchFigures.bytes(
                                        BenchSettings.ALL_REGION_SIZES[BenchSettings.ALL_REGION_SIZES.length - 1])
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
        BenchSettings settings = new BenchSettings(
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
                LockSection.measure(settings, out);
            }
            if (sections.contains("per-call")) {
                PerCallSection.measure(
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
                    PerCallSection.measure(
                            placement.openOnSource(0),
                            backend.open(placement.targetDevice(), VaWindow.forVgpu(1)),
                            placement.target(),
                            settings,
                            out);
                }
                if (sections.contains("replay")) {
                    ReplaySection.measure(placement, settings, out, label);
                }
                if (sections.contains("mem-sync")) {
                    MemSyncSection.measure(placement, settings, out, label);
                }
                if (sections.contains("blocked")) {
                    BlockedSection.measure(placement, settings.liveMib() * (1L << 20), out, label);
                    if (settings.large()) {
                        BlockedSection.measure(placement, 8L << 30, out, label);
                    }
                }
                if (sections.contains("small-allocs")) {
                    SmallAllocationsSection.measure(placement, settings, out, label);
                }
                if (sections.contains("md")) {
                    MdSection.measure(placement, settings, out, label);
                }
            }
        }
        return 0;
    }
}
