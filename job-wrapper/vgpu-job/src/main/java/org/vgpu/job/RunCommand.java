package org.vgpu.job;

import java.io.PrintStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.IntStream;

import org.apache.commons.cli.CommandLine;
import org.apache.commons.cli.Option;
import org.apache.commons.cli.Options;
import org.apache.commons.cli.ParseException;

import org.vgpu.common.cli.CommandLines;
import org.vgpu.common.cli.Subcommand;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;
import org.vgpu.migration.FaultPoint;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.DeferredNativeBackend;
import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.cli.WorkloadSelection;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadCheck;
import org.vgpu.runtime.workloads.Workloads;

/**
 * {@code vgpu run}: the job side of an assembly. Opens the vGPUs that the SPANK bridge put into the
 * job's environment (local GPUs and lent GPU workers, each migratable, the migration agent on
 * VGPU_AGENT_SOCKET), says where each one lives, and runs the chosen test workloads on all of them
 * at once, each checked against its CPU reference. {@code --hold} keeps them open afterwards so
 * that a migration the tracker (or {@code vgpu migrate}) sends can be watched, then checks again.
 * Exit 0 when every check passed, 1 when one failed or a vGPU could not be opened, 2 for bad
 * usage, a malformed vgpu environment, or none at all.
 *
 * <p>{@code vgpu run [options] -- COMMAND [ARGS...]} runs the user's program instead ({@link ProgramLaunch}): a Java
 * program's vGPUs opened in its own JVM by {@link InterposerPremain}, another program's served by the launcher's
 * {@link LocalWorker}; the exit status is the program's.
 */
public final class RunCommand implements Subcommand {
    /** Small enough to take seconds on a 2-core CI machine under the CPU emulation. */
    static final List<String> DEFAULT_WORKLOADS = List.of("vector-add", "saxpy", "pointer-chase");

    private static final String EMULATION_MARK = "  [emulated: CPU, not a GPU]";
    private static final String EXPECTED_RUNTIME = "expected-runtime";

    /** The options of the built-in checks, which mean nothing for a program of one's own. */
    private static final List<String> CHECK_OPTIONS = List.of(WorkloadSelection.OPTION, "size", "steps", "hold");

    /** How the command waits out {@code --hold}; tests act there instead of sleeping. */
    @FunctionalInterface
    interface Hold {
        void hold(Duration duration) throws InterruptedException;
    }

    private final Map<String, String> environment;
    private final Hold hold;
    private final Optional<Path> interposerJar;

    public RunCommand() {
        this(System.getenv(), Thread::sleep, ownJar());
    }

    /** @param environment the job's environment variables (tests give their own) */
    RunCommand(Map<String, String> environment, Hold hold) {
        this(environment, hold, ownJar());
    }

    /** @param interposerJar the jar {@code vgpu run --} gives the program's JVM as its interposer; empty: none here */
    RunCommand(Map<String, String> environment, Hold hold, Optional<Path> interposerJar) {
        this.environment = Map.copyOf(environment);
        this.hold = hold;
        this.interposerJar = interposerJar;
    }

    /** The jar this launcher runs from (target/vgpu.jar, whose manifest names the premain); empty when run from classes. */
    private static Optional<Path> ownJar() {
        try {
            Path location = Path.of(RunCommand.class
                    .getProtectionDomain()
                    .getCodeSource()
                    .getLocation()
                    .toURI());
            return Files.isRegularFile(location) ? Optional.of(location) : Optional.empty();
        } catch (URISyntaxException | RuntimeException e) {
            return Optional.empty();
        }
    }

    @Override
    public String name() {
        return "run";
    }

    @Override
    public String summary() {
        return "in a vgpu job: open its vGPUs (local and borrowed), start the migration agent, check the workloads on"
                + " each; with -- COMMAND, run a program of one's own on them instead";
    }

    @Override
    public String operands() {
        return "[-- COMMAND [ARGS...]]";
    }

    @Override
    public Options options() {
        return new Options()
                .addOption(WorkloadSelection.option(String.join(",", DEFAULT_WORKLOADS)))
                .addOption(Option.builder()
                        .longOpt("local-backend")
                        .hasArg()
                        .argName("NAME")
                        .desc("how local GPUs are driven: auto, native or emulated (default auto: native where this"
                                + " machine has a CUDA driver, even when it admits no GPU to the job yet, else the CPU"
                                + " emulation)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("emulated-gpus")
                        .hasArg()
                        .argName("N")
                        .desc("GPUs of the node the CPU emulation shows, GPU i as device i: at least the highest GPU"
                                + " index of the node plus one, so a GPU the tracker grants can be opened (default "
                                + EmulatedBackend.DEFAULT_DEVICE_COUNT + ")")
                        .get())
                .addOption(Option.builder()
                        .longOpt("size")
                        .hasArg()
                        .argName("N")
                        .desc("problem-size multiplier, >= 1 (default 1, sized for the CPU emulation)")
                        .get())
                .addOption(Option.builder()
                        .longOpt("steps")
                        .hasArg()
                        .argName("N")
                        .desc("run the workloads N times on every vGPU, each time with new inputs (default 1)")
                        .get())
                .addOption(Option.builder()
                        .longOpt(EXPECTED_RUNTIME)
                        .hasArg()
                        .argName("DURATION")
                        .desc("how long this program is expected to run from now, e.g. 45m or 2h (at most "
                                + JobAssembly.EXPECTED_RUNTIME_MAX.toDays() + "d; default: "
                                + JobAssembly.EXPECTED_RUNTIME_VARIABLE
                                + " when set, else no hint): the tracker moves a"
                                + " borrowed vGPU home only if the move pays before the job ends, counting from the"
                                + " hinted end or the time limit, whichever comes first")
                        .get())
                .addOption(Option.builder()
                        .longOpt("hold")
                        .hasArg()
                        .argName("SECONDS")
                        .desc("afterwards keep the vGPUs open with the agent listening for SECONDS, then say where each"
                                + " vGPU is and check again (to watch a migration)")
                        .get())
                .addOption(Option.builder()
                        .longOpt(MpjRanks.OPTION)
                        .hasArg()
                        .argName("N")
                        .desc("with -- java ...: run the MPJ Express program as N ranks in multicore mode (threads of"
                                + " one JVM), rank i on vGPU i; N at most the job's vGPUs. Needs MPJ Express (Debian's"
                                + " libmpj-java, or " + MpjRanks.MPJ_DIR_VARIABLE + ")")
                        .get());
    }

    @Override
    public int run(CommandLine line, PrintStream out, PrintStream err) throws ParseException {
        List<String> program = line.getArgList();
        if (!program.isEmpty()) {
            return runProgram(line, program, out, err);
        }
        if (line.hasOption(MpjRanks.OPTION)) {
            throw new ParseException("--" + MpjRanks.OPTION + " is for a program of one's own: vgpu run [options] --"
                    + " COMMAND [ARGS...]");
        }
        List<Workload> workloads = WorkloadSelection.select(
                line.getOptionValues(WorkloadSelection.OPTION),
                DEFAULT_WORKLOADS.stream()
                        .map(name -> Workloads.named(name).orElseThrow())
                        .toList());
        String backendName = CommandLines.choice(line, "local-backend", Backends.AUTO, Backends.CHOICES);
        int emulatedGpus = emulatedGpus(line);
        int scale = CommandLines.intValue(line, "size", 1, 1);
        int steps = CommandLines.intValue(line, "steps", 1, 1);
        int holdSeconds = line.hasOption("hold") ? CommandLines.intValue(line, "hold", 0, 1) : 0;
        Optional<Duration> expectedRuntime = expectedRuntime(line);

        Optional<JobAssembly> parsed;
        Optional<FaultPoint> testFault;
        try {
            parsed = taskAssembly(new HashMap<>(environment));
            testFault = TestMigrationFault.from(environment);
        } catch (ConfigException e) {
            err.println("vgpu run: the job's vgpu environment is malformed: " + e.detail());
            return 2;
        } catch (InputException e) {
            err.println("vgpu run: " + e.detail());
            return 2;
        }
        if (parsed.isEmpty()) {
            err.println(notAJob("vgpu demo runs the workloads on this machine alone."));
            return 2;
        }
        JobAssembly assembly =
                expectedRuntime.map(parsed.get()::withExpectedRuntime).orElse(parsed.get());
        testFault.ifPresent(point -> err.println(TestMigrationFault.warning(point)));
        printAssembly(assembly, out);

        GpuBackend local = Backends.forJob(backendName, emulatedGpus);
        try (JobVgpus job = JobVgpus.open(
                assembly,
                CudaOrdinals.of(environment, local),
                local,
                RemoteConfig.defaults(),
                report -> out.println("migration: " + report.summary()),
                testFault.map(TestMigrationFault::at).orElse(MigrationFaults.NONE))) {
            job.warnings().forEach(warning -> err.println("vgpu run: " + warning));
            printVgpus(job, backendName, out);
            boolean passed = checkAll(job, workloads, scale, steps, 1, out);
            if (holdSeconds > 0) {
                passed &= holdAndCheck(job, Duration.ofSeconds(holdSeconds), out);
                passed &= checkAll(job, workloads, scale, steps, steps + 1, out);
            }
            return passed ? 0 : 1;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("vgpu run: interrupted during the hold");
            return 1;
        }
    }

    private static int emulatedGpus(CommandLine line) throws ParseException {
        int emulatedGpus = CommandLines.intValue(line, "emulated-gpus", EmulatedBackend.DEFAULT_DEVICE_COUNT, 1);
        if (emulatedGpus > BridgeContract.GPU_INDEX_MAX + 1) {
            throw new ParseException("--emulated-gpus must be <= " + (BridgeContract.GPU_INDEX_MAX + 1)
                    + " (GPU indices go up to " + BridgeContract.GPU_INDEX_MAX + "), got " + emulatedGpus);
        }
        return emulatedGpus;
    }

    private static String notAJob(String instead) {
        return "vgpu run: this is not a vgpu job: none of " + String.join(", ", AssemblyEnvironment.BRIDGE_VARIABLES)
                + " is set. Run it inside a job submitted with --gres=vgpu:N, where the vgpu SPANK plugin exports the"
                + " assembly; " + instead;
    }

    /**
     * {@code vgpu run [options] -- COMMAND [ARGS...]}: the environment is checked here, before the program starts, so
     * that a job that is none or is malformed is told so once (exit 2) and not by each JVM the command starts; the
     * vGPUs are opened by the interposer in the program's JVM.
     */
    private int runProgram(CommandLine line, List<String> program, PrintStream out, PrintStream err)
            throws ParseException {
        for (String checkOption : CHECK_OPTIONS) {
            if (line.hasOption(checkOption)) {
                throw new ParseException("--" + checkOption + " is for the built-in checks (vgpu run without a"
                        + " command), not for " + program.getFirst());
            }
        }
        String backendName = CommandLines.choice(line, "local-backend", Backends.AUTO, Backends.CHOICES);
        int emulatedGpus = emulatedGpus(line);
        Map<String, String> programEnvironment = new HashMap<>(environment);
        // the hint reaches the program's JVM as the variable its interposer reads, checked here like the flag's
        Optional<Duration> expectedRuntime = expectedRuntime(line);
        expectedRuntime.ifPresent(
                runtime -> programEnvironment.put(JobAssembly.EXPECTED_RUNTIME_VARIABLE, runtime.toSeconds() + "s"));
        Optional<JobAssembly> assembly;
        try {
            assembly = taskAssembly(programEnvironment);
            TestMigrationFault.from(programEnvironment); // refused here, before the program starts, when unknown
        } catch (ConfigException e) {
            err.println("vgpu run: the job's vgpu environment is malformed: " + e.detail());
            return 2;
        } catch (InputException e) {
            err.println("vgpu run: " + e.detail());
            return 2;
        }
        if (assembly.isEmpty()) {
            err.println(notAJob("outside a job, run " + program.getFirst()
                    + " directly: org.vgpu.api.VirtualGpus.fromEnvironment() then gives it this machine's GPUs or the"
                    + " CPU emulation."));
            return 2;
        }
        Optional<ProgramFile.Refusal> cannotRun = ProgramFile.refusal(program.getFirst(), programEnvironment);
        if (cannotRun.isPresent()) {
            err.println("vgpu run: " + cannotRun.get().reason());
            return cannotRun.get().status();
        }
        if (interposerJar.isEmpty()) {
            err.println("vgpu run: running a program needs the vgpu jar as its interposer, and this launcher does"
                    + " not run from one: use bin/vgpu of a packaged build (job-wrapper/target/vgpu.jar)");
            return 2;
        }
        int ranks = line.hasOption(MpjRanks.OPTION) ? CommandLines.intValue(line, MpjRanks.OPTION, 1, 1) : 0;
        try (MpjRanks mpj = ranks == 0
                ? null
                : MpjRanks.prepare(ranks, program, assembly.get().count(), environment)) {
            if (mpj != null) {
                programEnvironment.putAll(mpj.environment());
            }
            return new ProgramLaunch(
                            mpj == null ? program : mpj.command(),
                            programEnvironment,
                            interposerJar.get(),
                            InterposerPremain.arguments(backendName, emulatedGpus),
                            LocalWorker.starter(assembly.get(), programEnvironment, backendName, emulatedGpus, err),
                            assembly.get().agentSocket())
                    .run(out, err);
        } catch (InputException e) {
            err.println("vgpu run: " + e.detail());
            return 2;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            err.println("vgpu run: interrupted while " + program.getFirst() + " ran");
            return 1;
        }
    }

    /**
     * The job's assembly as this task of its step uses it: its share ({@link TaskShare}) when the step runs several
     * tasks on this node, named in {@code environment} for the program; the whole assembly otherwise.
     */
    private static Optional<JobAssembly> taskAssembly(Map<String, String> environment) {
        Optional<JobAssembly> job = JobAssembly.fromEnvironment(environment);
        if (job.isEmpty() || environment.containsKey(TaskShare.VARIABLE)) {
            return job; // not a job, or a vgpu run inside a task's program: its share is named already
        }
        Optional<TaskShare> share = TaskShare.forStep(environment, job.get().count());
        share.ifPresent(mine -> environment.put(TaskShare.VARIABLE, mine.text()));
        return share.map(job.get()::share).or(() -> job);
    }

    /** {@code --expected-runtime}, when given; a bad value is a usage error. */
    private static Optional<Duration> expectedRuntime(CommandLine line) throws ParseException {
        String text = line.getOptionValue(EXPECTED_RUNTIME);
        if (text == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(JobAssembly.expectedRuntime(text.strip()));
        } catch (IllegalArgumentException e) {
            throw new ParseException("--" + EXPECTED_RUNTIME + ": " + e.getMessage());
        }
    }

    // ---- what the job has

    private static void printAssembly(JobAssembly assembly, PrintStream out) {
        out.printf(
                "vgpu job%s: %d vGPUs (%d local, %d remote) from the %s, windows from 0x%x, migration %s%s%s%s%n",
                assembly.node().map(node -> " on node " + node).orElse(""),
                assembly.count(),
                assembly.localCount(),
                assembly.remoteCount(),
                assembly.source() == JobAssembly.Source.TRACKER ? "tracker" : "local-only fallback",
                assembly.windowBase(),
                assembly.migration().text(),
                assembly.agentSocket()
                        .map(socket -> ", agent on " + socket)
                        .orElse(", no agent (VGPU_AGENT_SOCKET unset)"),
                assembly.tracker().map(tracker -> ", tracker " + tracker).orElse(""),
                assembly.expectedRuntime()
                        .map(runtime -> ", expected runtime " + runtime.toSeconds() + " s")
                        .orElse(""));
    }

    private static void printVgpus(JobVgpus job, String backendName, PrintStream out) {
        if (job.local() instanceof DeferredNativeBackend deferred && !deferred.loaded()) {
            out.println("local backend native, deferred: the NVIDIA driver sees no GPU of this node yet; a GPU the"
                    + " tracker grants is driven natively once the job's device cgroup admits it");
        }
        if (job.local().isEmulation()) {
            out.println(
                    "local backend emulated" + (backendName.equals(Backends.AUTO) ? " (auto: no CUDA GPU here)" : "")
                            + ": kernels run as Java twins; results check the runtime, times say nothing about GPUs"
                            + EMULATION_MARK);
        }
        for (int position = 0; position < job.assembly().count(); position++) {
            JobAssembly.Vgpu vgpu = job.assembly().vgpus().get(position);
            DeviceProperties device = job.device(position);
            String detail = switch (vgpu) {
                case JobAssembly.Local local ->
                    String.format(
                            "(%s), CUDA device %d: %s",
                            job.local().name(), job.cudaOrdinal(local.nodeGpu()), deviceText(device));
                case JobAssembly.Remote remote -> "(worker's device: " + deviceText(device) + ")";
            };
            out.printf(
                    "vgpu %d: %s %s, %s%s%n",
                    vgpu.index(), JobVgpus.where(vgpu), detail, job.assembly().window(vgpu.index()), mark(device));
        }
    }

    private static String deviceText(DeviceProperties device) {
        return device.name() + ", " + (device.totalMemory() >> 20) + " MiB";
    }

    private static String mark(DeviceProperties device) {
        return device.emulated() ? EMULATION_MARK : "";
    }

    // ---- checks

    /** What one vGPU's thread found: its lines, in order, and the workloads that failed. */
    record VgpuChecks(List<String> lines, Set<String> failed) {}

    /**
     * Runs the workloads on every vGPU at once, one thread each, and prints each vGPU's lines in vGPU
     * order and the summary.
     *
     * @param firstStep the number of the first step, so that a second round draws new inputs
     */
    private static boolean checkAll(
            JobVgpus job, List<Workload> workloads, int scale, int steps, int firstStep, PrintStream out) {
        List<MigratableGpu> vgpus = job.vgpus();
        List<Future<VgpuChecks>> running = new ArrayList<>();
        try (ExecutorService threads = Executors.newThreadPerTaskExecutor(
                Thread.ofPlatform().name("vgpu-run-", 0).factory())) {
            for (int k = 0; k < vgpus.size(); k++) {
                int position = k;
                running.add(threads.submit(() -> checkOne(
                        vgpus.get(position),
                        index(job, position),
                        workloads,
                        scale,
                        steps,
                        firstStep,
                        mark(job.device(position)))));
            }
        }
        List<Integer> failedVgpus = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        for (int k = 0; k < running.size(); k++) {
            VgpuChecks checks = outcome(running.get(k), index(job, k), mark(job.device(k)));
            checks.lines().forEach(out::println);
            if (!checks.failed().isEmpty()) {
                failedVgpus.add(k);
                failures.add("vgpu " + index(job, k) + " (" + String.join(", ", checks.failed()) + ")");
            }
        }
        long remoteNow = vgpus.stream()
                .filter(gpu -> gpu.backendName().equals(RemoteGpu.NAME))
                .count();
        out.printf(
                "%s: %d of %d vGPUs (%d local, %d remote) passed %s%s%s%s%n",
                failedVgpus.isEmpty() ? "PASS" : "FAIL",
                vgpus.size() - failedVgpus.size(),
                vgpus.size(),
                vgpus.size() - remoteNow,
                remoteNow,
                String.join(", ", workloads.stream().map(Workload::name).toList()),
                steps > 1 ? " (" + steps + " steps)" : "",
                failures.isEmpty() ? "" : "; failed: " + String.join(", ", failures),
                emulationNote(job));
        return failedVgpus.isEmpty();
    }

    /** One vGPU's checks, step by step; a check a migration fell inside says where it began and ended. */
    static VgpuChecks checkOne(
            MigratableGpu gpu, int vgpu, List<Workload> workloads, int scale, int steps, int firstStep, String mark) {
        List<String> lines = new ArrayList<>();
        Set<String> failed = new LinkedHashSet<>();
        for (int step = firstStep; step < firstStep + steps; step++) {
            String subject = "vgpu " + vgpu + "  " + (steps > 1 || firstStep > 1 ? "step " + step + "  " : "");
            for (Workload workload : workloads) {
                String began = gpu.location();
                WorkloadCheck check = WorkloadCheck.run(workload, gpu, scale, step);
                String ended = gpu.location();
                // A migration that fell inside this check: the line says so, as the check spans both places.
                String moved = began.equals(ended) ? "" : "  (moved during the check: " + began + " -> " + ended + ")";
                lines.add(check.line(subject) + moved + mark);
                if (!check.passed()) {
                    failed.add(workload.name());
                }
            }
        }
        return new VgpuChecks(lines, failed);
    }

    /** A vGPU's checks; a thread that died of something other than a vGPU error is that vGPU's failure. */
    private static VgpuChecks outcome(Future<VgpuChecks> checks, int vgpu, String mark) {
        try {
            return checks.get();
        } catch (ExecutionException e) {
            return new VgpuChecks(
                    List.of(String.format("FAIL  vgpu %d  the checks ended early: %s%s", vgpu, e.getCause(), mark)),
                    Set.of("all"));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new VgpuChecks(List.of(String.format("FAIL  vgpu %d  interrupted%s", vgpu, mark)), Set.of("all"));
        }
    }

    /**
     * The job's index of the vGPU at {@code position} of what this run opened: the same number for a task's share as
     * the tracker, the agent and the other tasks use ({@code vgpu 2} is the first of task 1's vGPUs 2-3).
     */
    private static int index(JobVgpus job, int position) {
        return job.assembly().vgpus().get(position).index();
    }

    /** Says which vGPUs are the CPU emulation, for lines about all of them. */
    private static String emulationNote(JobVgpus job) {
        List<String> emulated = IntStream.range(0, job.vgpus().size())
                .filter(k -> job.device(k).emulated())
                .mapToObj(k -> String.valueOf(index(job, k)))
                .toList();
        return emulated.isEmpty() ? "" : "  [emulated: vgpu " + String.join(", ", emulated) + " on the CPU, not a GPU]";
    }

    // ---- the hold

    /**
     * Leaves data on every vGPU, waits with the agent listening, then says where each vGPU is now and
     * whether its data came through.
     */
    private boolean holdAndCheck(JobVgpus job, Duration duration, PrintStream out) throws InterruptedException {
        List<MigratableGpu> vgpus = job.vgpus();
        boolean intact = true;
        try (HeldData held = HeldData.place(vgpus)) {
            out.printf(
                    "holding the vGPUs for %d s with %d KiB on each%s%n",
                    duration.toSeconds(),
                    HeldData.BYTES >> 10,
                    job.agentSocket()
                            .map(socket -> "; the agent on " + socket + " takes migrate <vgpu> <GPU|HOST:PORT>")
                            .orElse(" (no agent: nothing can move them)"));
            hold.hold(duration);
            for (int k = 0; k < vgpus.size(); k++) {
                MigratableGpu gpu = vgpus.get(k);
                String mark = mark(job.device(k));
                out.printf(
                        "vgpu %d: now on %s after %d migration(s)%s%n",
                        index(job, k), gpu.location(), gpu.migrationCount(), mark);
                boolean same;
                String outcome;
                try {
                    same = held.intact(k);
                    outcome = same ? "read back unchanged" : "CHANGED";
                } catch (VgpuException e) {
                    same = false;
                    outcome = "unreadable: " + e.getMessage();
                }
                out.printf(
                        "%s  vgpu %d  %-15s %d KiB written before the hold, %s%s%n",
                        same ? "PASS" : "FAIL", index(job, k), "held-data", HeldData.BYTES >> 10, outcome, mark);
                intact &= same;
            }
        }
        return intact;
    }
}
