package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.vgpu.common.net.Endpoint;
import org.vgpu.common.security.SiteKey;
import org.vgpu.common.security.ThrowawaySiteKey;
import org.vgpu.job.JobAssembly;
import org.vgpu.job.JobVgpus;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.Backends;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.lender.LaunchedWorker;
import org.vgpu.runtime.remote.lender.WorkerLauncher;
import org.vgpu.runtime.remote.lender.WorkerSpec;
import org.vgpu.runtime.remote.security.TlsConfig;
import org.vgpu.runtime.workloads.LennardJonesWorkload;
import org.vgpu.runtime.workloads.WorkloadResult;
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.report.Report;
import org.vgpu.tracker.report.ReportTable;
import org.vgpu.tracker.server.TrackerDaemon;
import org.vgpu.tracker.server.TrackerProtocol;

/**
 * The hook's story with nothing typed, told on a backend: the real tracker (its daemon ticking, its socket, its
 * migration hook and cost model) over the unit tests' in-memory Slurm, standing in for Slurm on machines that have
 * none. Node n1 owns one GPU, node n2 (lend partition only) another, served by a worker process of the chosen backend
 * on CUDA device {@code lenderDevice}. A filler job holds n1's GPU; a {@code --gres=vgpu:1} job submitted meanwhile
 * starts at once on n2's GPU, borrowed through its holder, and its app runs the Lennard-Jones MD workload back to
 * back, each run checked against the double-precision CPU reference. The filler ends; nothing else is done: the hook
 * claims n1's GPU with a grant holder, the job's agent takes the signed command, and the vGPU moves home, natively,
 * while the MD keeps running. The story ends with a few runs on the home GPU and the tracker's {@code vgpu report}.
 *
 * <p>Every run records where its vGPU was when it began and when it ended, so the one the move fell in (begun on
 * the borrowed GPU, ended at home) is told apart from those before and after.
 */
final class HookStory {
    /** MD runs begun on the home GPU, after the move, before the app ends. */
    static final int RUNS_AFTER = 3;

    /** 4 x 108 atoms (a 5 x 5 x 5 fcc lattice of 500): each run is 40 steps of 5 launches. */
    private static final int MD_SCALE = 4;

    private static final int MIN_RUNS_BEFORE = 3;

    /** One MD run: where the vGPU was as it began and as it ended, and its check. */
    record Run(int number, String began, String ended, WorkloadResult result) {
        boolean straddles(String borrowed, String home) {
            return began.equals(borrowed) && ended.equals(home);
        }

        String line() {
            String where = began.equals(ended) ? "on " + began : "begun on " + began + ", ended on " + ended;
            return String.format(
                    "md run %d %s: %s, %s",
                    number, where, result.passed() ? "PASS" : "FAIL " + result.errorSummary(), result.detail());
        }
    }

    /** What the story saw, for its tests to assert. */
    record Told(
            String borrowedLocation,
            String homeLocation,
            int homeDevice,
            String backendAtEnd,
            List<Run> runs,
            StatusReport.Migration migration,
            MigrationReport agentReport,
            Duration releaseToStart,
            Duration releaseToHome,
            List<String> slurmActions,
            long lenderHolder,
            Report report) {
        List<Run> before() {
            return runs.stream()
                    .filter(run ->
                            run.began().equals(borrowedLocation) && run.ended().equals(borrowedLocation))
                    .toList();
        }

        List<Run> during() {
            return runs.stream()
                    .filter(run -> run.straddles(borrowedLocation, homeLocation))
                    .toList();
        }

        List<Run> after() {
            return runs.stream().filter(run -> run.began().equals(homeLocation)).toList();
        }

        String tally() {
            long failed = runs.stream().filter(run -> !run.result().passed()).count();
            String during = during().isEmpty()
                    ? "none during (the move fell between two runs)"
                    : during().size() + " during (run " + during().getFirst().number()
                            + ": begun on the borrowed GPU, ended at home)";
            return String.format(
                    "md runs: %d before the move, %s, %d after; %s",
                    before().size(), during, after().size(), failed == 0 ? "all passed" : failed + " FAILED");
        }
    }

    private HookStory() {}

    /**
     * Tells the story, printing each step to {@code out} under {@code prefix}.
     *
     * @param backend      "native" or "emulated": the worker's and the job's local backend
     * @param lenderDevice the CUDA device (the emulation's device) of the worker that n2 lends
     * @param dir          an empty directory for the site configuration and the ledger
     */
    static Told tell(String backend, int lenderDevice, Path dir, PrintStream out, String prefix) throws Exception {
        List<MigrationReport> reports = new CopyOnWriteArrayList<>();
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("hook-story")) {
            Files.writeString(dir.resolve("vgpu.conf"), """
                    [cluster]
                    name = hook-story
                    tracker = 127.0.0.1:7400
                    token_key_file = %s
                    lend_partition = lend
                    [policy]
                    idle_grace = 0s
                    [node n1]
                    gpus = 1
                    gpu_memory = 80GiB
                    vgpus = 8
                    lender_port = 7501
                    address = 127.0.0.1
                    [node n2]
                    gpus = 1
                    gpu_memory = 80GiB
                    vgpus = 8
                    lender_port = 7502
                    address = 127.0.0.1
                    """.formatted(key.keyFile()));
            // The tracker's daemon, its socket's threads and this story all reach it: InMemorySlurm is thread-safe.
            InMemorySlurm slurm = new InMemorySlurm();
            slurm.addNode("n1", 1, 8);
            slurm.addNode("n2", 1, 8, List.of("lend"));
            long filler = slurm.runOn("n1", List.of(0), 1);
            long job = slurm.submitVgpuJob(1);
            say(
                    out,
                    prefix,
                    "Slurm (in-memory stand-in): filler job " + filler + " holds n1's GPU 0; job " + job
                            + " asks --gres=vgpu:1 on n1; n2 lends its GPU 0 (" + backend + " worker on CUDA device "
                            + lenderDevice + ")");
            Ledger ledger = Ledger.open(dir.resolve("tracker.ledger"));
            Tracker tracker = new Tracker(
                    SiteConfigReader.read(dir.resolve("vgpu.conf")),
                    slurm,
                    ledger,
                    SiteKey.load(key.keyFile()),
                    Tracker.Settings.defaults(),
                    Clock.systemUTC());
            TrackerDaemon daemon = TrackerDaemon.start(
                    tracker, ledger, new Endpoint("127.0.0.1", 0), Duration.ofMillis(200), Optional.empty(), Set.of());
            try {
                Instant submitted = Instant.now();
                // The job is planned on n1 (n2 is in the lend partition only) with n2's GPU borrowed; its holder
                // starts.
                Lend lend = awaitLend(tracker, ledger, slurm, job);
                // as a holder's worker: the key of its one lend, not the site key
                Path lendKeyFile = dir.resolve("lend.key");
                SiteKey.load(key.keyFile())
                        .forLend(Long.toString(job), lend.vgpu())
                        .writeNewFile(lendKeyFile);
                try (LaunchedWorker worker = new WorkerLauncher()
                        .launch(new WorkerSpec(
                                new Endpoint("127.0.0.1", 0),
                                backend,
                                lenderDevice,
                                "n2-holder-" + lend.holder().getAsLong(),
                                lendKeyFile,
                                Optional.of(new TlsConfig.SelfSigned()),
                                Optional.empty()))) {
                    // as a holder's worker: TLS with a certificate of its own, pinned in its proof
                    String proof = key.lendIssuer(Long.toString(job), lend.vgpu())
                            .issue(
                                    Long.toString(job),
                                    lend.vgpu(),
                                    worker.workerId(),
                                    worker.certificate(),
                                    Duration.ofMinutes(5));
                    String answer = TrackerProtocol.line(
                            tracker.worker(job, lend.vgpu(), worker.endpoint(), worker.workerId(), proof));
                    if (!answer.equals("ok")) {
                        throw new AssertionError("the tracker refused the holder's worker: " + answer);
                    }
                    Answer.Assembled assembled = awaitAssembly(tracker, slurm, job);
                    Answer.Borrowed borrowed = assembled.borrowed().getFirst();
                    say(
                            out,
                            prefix,
                            "job " + job + " released "
                                    + Duration.between(submitted, Instant.now()).toMillis()
                                    + " ms after submission, its vGPU 0 borrowed from n2 through holder "
                                    + lend.holder().getAsLong() + " (worker " + borrowed.worker() + ")");
                    String endpoint = borrowed.worker().toString();
                    Map<String, String> environment = Map.of(
                            "VGPU_COUNT",
                            "1",
                            "VGPU_ASSEMBLY",
                            "0=remote:" + endpoint,
                            "VGPU_LOCAL_GPUS",
                            "",
                            "VGPU_REMOTE",
                            "0@" + endpoint + "#" + borrowed.token(),
                            "VGPU_NODE",
                            "n1",
                            "VGPU_TRACKER",
                            daemon.endpoint().toString(),
                            "SLURM_JOB_ID",
                            Long.toString(job));
                    GpuBackend local = Backends.open(backend);
                    try (JobVgpus vgpus = JobVgpus.open(
                            JobAssembly.fromEnvironment(environment).orElseThrow(),
                            local,
                            RemoteConfig.defaults(),
                            reports::add)) {
                        MigratableGpu vgpu = vgpus.vgpus().getFirst();
                        String borrowedLocation = vgpu.location();
                        say(
                                out,
                                prefix,
                                "vGPU 0 runs on " + borrowedLocation + ": " + describe(worker, lenderDevice, local));
                        try (MdApp app = MdApp.start(vgpu, out, prefix)) {
                            app.awaitRuns(MIN_RUNS_BEFORE);
                            Instant released = Instant.now();
                            say(out, prefix, "the filler ends: n1's GPU 0 is free");
                            slurm.setState(filler, "COMPLETED");
                            while (!(vgpu.placement() instanceof MigrationTarget.LocalGpu)) {
                                slurm.schedule();
                                Thread.sleep(20);
                            }
                            Instant home = Instant.now();
                            StatusReport.Migration migration = awaitSettled(tracker);
                            String homeLocation = vgpu.location();
                            List<Run> runs = app.finish();
                            MigrationReport agentReport = reports.getLast();
                            int homeDevice = ((MigrationTarget.LocalGpu) vgpu.placement()).index();
                            say(out, prefix, "the tracker: " + migration);
                            say(out, prefix, "the agent: " + agentReport.summary());
                            Duration releaseToStart = Duration.between(released, migration.startedAt());
                            Duration releaseToHome = Duration.between(released, home);
                            say(
                                    out,
                                    prefix,
                                    "filler ended -> migration started " + releaseToStart.toMillis()
                                            + " ms, -> vGPU home " + releaseToHome.toMillis() + " ms; now on "
                                            + homeLocation
                                            + ": " + describeLocal(local, vgpu));
                            Report report = Report.of(tracker.status());
                            Told told = new Told(
                                    borrowedLocation,
                                    homeLocation,
                                    homeDevice,
                                    vgpu.backendName(),
                                    runs,
                                    migration,
                                    agentReport,
                                    releaseToStart,
                                    releaseToHome,
                                    List.copyOf(slurm.actions),
                                    lend.holder().getAsLong(),
                                    report);
                            say(out, prefix, told.tally());
                            for (String line : ReportTable.write(report).split("\n", -1)) {
                                say(out, prefix, "  " + line);
                            }
                            return told;
                        }
                    }
                }
            } finally {
                daemon.close();
                ledger.close();
            }
        }
    }

    /** What every telling must show, whatever the backend. */
    static void assertTold(Told told, String backend) {
        assertEquals("ok", told.migration().outcome(), told.migration().toString());
        assertEquals("n2:0", told.migration().from());
        assertEquals("n1:0", told.migration().to());
        assertEquals(backend, told.backendAtEnd());
        assertTrue(told.before().size() >= MIN_RUNS_BEFORE, told.tally());
        assertTrue(told.after().size() >= RUNS_AFTER, told.tally());
        assertEquals(
                told.runs().size(),
                told.before().size() + told.during().size() + told.after().size(),
                "every run began on the borrowed GPU or at home, and none went back: " + told.runs());
        for (Run run : told.runs()) {
            assertTrue(run.result().passed(), run.line());
        }
        assertTrue(told.agentReport().memSyncBytes() > 0, told.agentReport().summary());
        assertTrue(
                told.slurmActions().contains("cancel " + told.lenderHolder()),
                "the lender's holder is cancelled: " + told.slurmActions());
        assertEquals(List.of(), told.report().borrowed(), "the report shows nothing borrowed any more");
        assertEquals(1, told.report().migrations().size(), "the report lists the move");
    }

    /** The lender's worker and its GPU, by PCI bus id where the backend knows it (the job sees the same GPUs). */
    private static String describe(LaunchedWorker worker, int device, GpuBackend local) {
        return "worker " + worker.workerId() + " at " + worker.endpoint() + " on its CUDA device " + device
                + local.pciBusId(device).map(id -> " at PCI " + id).orElse("");
    }

    private static String describeLocal(GpuBackend local, MigratableGpu vgpu) {
        if (vgpu.placement() instanceof MigrationTarget.LocalGpu gpu) {
            return "CUDA device " + gpu.index()
                    + local.pciBusId(gpu.index()).map(id -> " at PCI " + id).orElse("");
        }
        return vgpu.location();
    }

    private static void say(PrintStream out, String prefix, String line) {
        out.println(prefix + line);
        out.flush();
    }

    /**
     * The job's app: Lennard-Jones MD runs back to back on one thread, each checked on another so that the app's
     * thread goes from one run's last call to the next one's first without a pause a move could fall into unseen.
     * The app ends on its own after {@link #RUNS_AFTER} runs begun on a local GPU: on a GPU a run takes less time
     * than its check on the CPU, so an app that ran until told to stop would leave a backlog of checks growing with
     * every run. The app keeps a state of its own allocated for its whole life, as a real one keeps its
     * trajectory or neighbour lists, and checks it at its end.
     */
    private static final class MdApp implements AutoCloseable {
        private static final Duration PATIENCE = Duration.ofMinutes(2);
        private static final long HELD_BYTES = 64 * 1024;

        private final MigratableGpu vgpu;
        private final PrintStream out;
        private final String prefix;
        private final LennardJonesWorkload workload = new LennardJonesWorkload();
        private final ExecutorService checker = Executors.newSingleThreadExecutor();
        private final ExecutorService app = Executors.newSingleThreadExecutor();
        private final AtomicBoolean stopping = new AtomicBoolean();
        private final List<Run> runs = new CopyOnWriteArrayList<>();
        private Future<?> loop;

        private MdApp(MigratableGpu vgpu, PrintStream out, String prefix) {
            this.vgpu = vgpu;
            this.out = out;
            this.prefix = prefix;
        }

        static MdApp start(MigratableGpu vgpu, PrintStream out, String prefix) {
            MdApp md = new MdApp(vgpu, out, prefix);
            md.loop = md.app.submit(md::loop);
            return md;
        }

        private Void loop() throws Exception {
            // The app's own state, live for its whole life beside the buffers each run allocates and frees: a move
            // that falls between two runs still carries memory (mem-sync is never empty), and the app finds it
            // unchanged at its end.
            long held = vgpu.memAlloc(HELD_BYTES);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment state = arena.allocate(HELD_BYTES);
                for (long i = 0; i < HELD_BYTES; i++) {
                    state.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
                }
                vgpu.memcpyHtoD(held, state, HELD_BYTES);
                runUntilHomeRunsAreDone();
                MemorySegment back = arena.allocate(HELD_BYTES);
                vgpu.memcpyDtoH(back, held, HELD_BYTES);
                long differs = back.mismatch(state);
                if (differs != -1) {
                    throw new AssertionError("the app's held state differs at byte " + differs + " after its runs on "
                            + vgpu.location());
                }
            } finally {
                vgpu.memFree(held);
            }
            return null;
        }

        private void runUntilHomeRunsAreDone() throws Exception {
            List<Future<?>> checks = new ArrayList<>();
            int begunAtHome = 0;
            for (int number = 1; !stopping.get() && begunAtHome < RUNS_AFTER; number++) {
                if (vgpu.placement() instanceof MigrationTarget.LocalGpu) {
                    begunAtHome++;
                }
                String began = vgpu.location();
                LennardJonesWorkload.Simulation simulation = workload.simulate(vgpu, MD_SCALE, number);
                String ended = vgpu.location();
                int run = number;
                checks.add(checker.submit(() -> {
                    Run checked = new Run(run, began, ended, workload.check(simulation));
                    runs.add(checked);
                    say(out, prefix, checked.line());
                }));
            }
            for (Future<?> check : checks) {
                check.get();
            }
        }

        void awaitRuns(int count) throws Exception {
            long deadline = System.nanoTime() + PATIENCE.toNanos();
            while (runs.size() < count) {
                if (loop.isDone()) {
                    loop.get();
                    throw new AssertionError("the MD app ended before " + count + " runs were checked");
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("fewer than " + count + " MD runs checked within " + PATIENCE);
                }
                Thread.sleep(20);
            }
        }

        /** Waits for the app's own end (its runs at home done) and every check, and returns the runs in order. */
        List<Run> finish() throws Exception {
            try {
                loop.get(PATIENCE.toSeconds(), TimeUnit.SECONDS);
            } catch (TimeoutException late) {
                throw new AssertionError("the MD app did not finish its runs at home within " + PATIENCE
                        + "; runs checked so far: " + runs.size());
            }
            return runs.stream().sorted(Comparator.comparingInt(Run::number)).toList();
        }

        @Override
        public void close() {
            stopping.set(true);
            app.shutdownNow();
            checker.shutdownNow();
        }
    }

    /** Ticks (the daemon does) and schedules until the job's one lend has a running holder. */
    private static Lend awaitLend(Tracker tracker, Ledger ledger, InMemorySlurm slurm, long job)
            throws InterruptedException {
        for (int i = 0; i < 200; i++) {
            slurm.schedule();
            Optional<Lend> lend = ledger.assembly(job)
                    .flatMap(assembly -> assembly.lends().stream()
                            .filter(candidate -> candidate.gpu().isPresent())
                            .findFirst());
            if (lend.isPresent()) {
                return lend.get();
            }
            Thread.sleep(50);
        }
        throw new AssertionError("the tracker did not assemble job " + job + ": " + tracker.status());
    }

    private static Answer.Assembled awaitAssembly(Tracker tracker, InMemorySlurm slurm, long job)
            throws InterruptedException {
        for (int i = 0; i < 200; i++) {
            slurm.schedule();
            if (tracker.assembly(job, "n1") instanceof Answer.Assembled assembled) {
                return assembled;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("job " + job + " was not released: " + tracker.assembly(job, "n1"));
    }

    private static StatusReport.Migration awaitSettled(Tracker tracker) throws InterruptedException {
        for (int i = 0; i < 400; i++) {
            List<StatusReport.Migration> migrations = tracker.status().migrations();
            if (!migrations.isEmpty() && migrations.getLast().finishedAt().isPresent()) {
                return migrations.getLast();
            }
            Thread.sleep(50);
        }
        throw new AssertionError(
                "the migration did not settle: " + tracker.status().migrations());
    }
}
