package org.vgpu.tracker;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

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
import org.vgpu.siteconfig.SiteConfigReader;
import org.vgpu.tracker.ledger.Ledger;
import org.vgpu.tracker.ledger.Lend;
import org.vgpu.tracker.server.TrackerProtocol;

/**
 * On a GPU machine, the whole loop with nothing typed: the real tracker (its daemon ticking, its socket, its
 * migration hook) over the in-memory Slurm, a job process whose only vGPU is borrowed from a native worker process
 * on "n2", and node n1's one GPU — the machine's GPU, Device Minor 0 — busy with a filler job. The filler ends;
 * the hook claims the GPU with a grant holder, the job's agent (polling the tracker's socket) takes the signed
 * command, the vGPU moves home onto the GPU natively with its data intact, and the lender's holder is cancelled.
 * Slurm is the unit tests' stand-in here (the GPU machines have no Slurm); the testbed's hook-home scenario runs
 * the same loop on real Slurm with emulated GPUs.
 */
@Tag("gpu")
@Timeout(300)
class HookOnGpuTest {
    private static final int BYTES = 16 << 20;

    @TempDir
    Path dir;

    @Test
    void aGpuFreedOnTheJobsNodeTakesItsBorrowedVgpuHomeNatively() throws Exception {
        List<MigrationReport> reports = new CopyOnWriteArrayList<>();
        try (ThrowawaySiteKey key = ThrowawaySiteKey.create("hook-on-gpu");
                Arena arena = Arena.ofConfined()) {
            Files.writeString(dir.resolve("vgpu.conf"), """
                    [cluster]
                    name = gpu-machine
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
            // The tracker's daemon, its socket's threads and this test all reach it: InMemorySlurm is thread-safe.
            InMemorySlurm slurm = new InMemorySlurm();
            slurm.addNode("n1", 1, 8);
            slurm.addNode("n2", 1, 8, List.of("lend"));
            long filler = slurm.runOn("n1", List.of(0), 1);
            long job = slurm.submitVgpuJob(1);
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
                // The job is planned on n1 (n2 is in the lend partition only) with n2's GPU borrowed; its holder
                // starts.
                Lend lend = awaitLend(tracker, ledger, slurm, job);
                try (LaunchedWorker worker = new WorkerLauncher()
                        .launch(new WorkerSpec(
                                new Endpoint("127.0.0.1", 0),
                                "native",
                                0,
                                "n2-holder-" + lend.holder().getAsLong(),
                                key.keyFile()))) {
                    String proof = key.issuer()
                            .issue(Long.toString(job), lend.vgpu(), worker.workerId(), Duration.ofMinutes(5));
                    assertEquals(
                            "ok",
                            TrackerProtocol.line(
                                    tracker.worker(job, lend.vgpu(), worker.endpoint(), worker.workerId(), proof)));
                    Answer.Assembled assembled = awaitAssembly(tracker, slurm, job);
                    Answer.Borrowed borrowed = assembled.borrowed().getFirst();
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
                    GpuBackend local = Backends.open("native");
                    try (JobVgpus vgpus = JobVgpus.open(
                            JobAssembly.fromEnvironment(environment).orElseThrow(),
                            local,
                            RemoteConfig.defaults(),
                            reports::add)) {
                        MigratableGpu vgpu = vgpus.vgpus().getFirst();
                        byte[] bytes = pattern();
                        MemorySegment host = arena.allocate(BYTES);
                        host.copyFrom(MemorySegment.ofArray(bytes));
                        long address = vgpu.memAlloc(BYTES);
                        MemorySegment back = arena.allocate(BYTES);
                        // Traffic, so the agent's counters show what the remote GPU costs the job.
                        for (int i = 0; i < 8; i++) {
                            vgpu.memcpyHtoD(address, host, BYTES);
                            vgpu.memcpyDtoH(back, address, BYTES);
                        }
                        assertEquals("remote", vgpu.backendName());

                        Instant released = Instant.now();
                        slurm.setState(filler, "COMPLETED");
                        while (!(vgpu.placement() instanceof MigrationTarget.LocalGpu)) {
                            slurm.schedule();
                            Thread.sleep(50);
                        }
                        Instant home = Instant.now();
                        StatusReport.Migration migration = awaitSettled(tracker);
                        System.out.println("hook on GPU: " + migration);
                        System.out.println("hook on GPU: the agent's report: "
                                + reports.getLast().summary());
                        System.out.println("hook on GPU: filler ended -> migration started "
                                + Duration.between(released, migration.startedAt())
                                        .toMillis()
                                + " ms, -> vGPU home "
                                + Duration.between(released, home).toMillis() + " ms");
                        assertEquals("ok", migration.outcome());
                        assertEquals("n1:0", migration.to());
                        assertEquals("native", vgpu.backendName());
                        vgpu.memcpyDtoH(back, address, BYTES);
                        assertArrayEquals(bytes, back.toArray(ValueLayout.JAVA_BYTE), "the data came home");
                        assertTrue(
                                slurm.actions.contains("cancel " + lend.holder().getAsLong()),
                                "the lender's holder is cancelled: " + slurm.actions);
                    }
                }
            } finally {
                daemon.close();
                ledger.close();
            }
        }
    }

    private static byte[] pattern() {
        byte[] bytes = new byte[BYTES];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (i * 13 + (i >> 12));
        }
        return bytes;
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
        for (int i = 0; i < 200; i++) {
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
