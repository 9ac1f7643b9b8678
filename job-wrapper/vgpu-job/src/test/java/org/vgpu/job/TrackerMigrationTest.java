package org.vgpu.job;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.agent.AgentChannel;
import org.vgpu.common.line.LineClient;
import org.vgpu.common.net.Endpoint;
import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationReport;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.runtime.DeferredNativeBackend;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteCounters;

/**
 * A job whose vGPU 1 is borrowed from a worker, and a tracker that speaks the agent channel: the job's agent polls
 * it with each vGPU's figures, refuses a command whose mac does not verify or that names no vGPU of the job, and on
 * the tracker's mac'd {@code migrate 1 local:2} is granted GPU 2 and brings vGPU 1 home onto it with its data, then
 * reports {@code done ... ok}. Emulated devices, real sockets.
 */
@Timeout(120)
class TrackerMigrationTest {
    private static final int BYTES = 1 << 20;

    @TempDir
    Path directory;

    private static Map<String, String> environment(LentWorkers.Lend lend, FakeTracker tracker, Path socket) {
        Map<String, String> environment = new HashMap<>();
        environment.put("VGPU_COUNT", "2");
        environment.put("VGPU_ASSEMBLY", "0=local:0," + lend.assemblyEntry());
        environment.put("VGPU_LOCAL_GPUS", "0");
        // as a job that may be granted its node's other GPUs sees them: all of them, in PCI order
        environment.put("CUDA_VISIBLE_DEVICES", "0,1,2,3");
        environment.put("CUDA_DEVICE_ORDER", "PCI_BUS_ID");
        environment.put("VGPU_REMOTE", lend.remoteEntry());
        environment.put("VGPU_AGENT_SOCKET", socket.toString());
        environment.put("VGPU_MIGRATE", "auto");
        environment.put("VGPU_NODE", "n1");
        environment.put("VGPU_SOURCE", "tracker");
        environment.put("VGPU_TRACKER", tracker.address());
        environment.put("SLURM_JOB_ID", LentWorkers.JOB);
        return environment;
    }

    @Test
    void theTrackersMigrateBringsABorrowedVgpuHomeAndOnlyTheTrackersCommandsRun() throws Exception {
        List<MigrationReport> reports = new CopyOnWriteArrayList<>();
        try (LentWorkers lenders = new LentWorkers();
                FakeTracker tracker = new FakeTracker();
                Arena arena = Arena.ofConfined()) {
            LentWorkers.Lend lend = lenders.lend(1, 0);
            JobAssembly assembly = JobAssembly.fromEnvironment(
                            environment(lend, tracker, directory.resolve("agent.sock")))
                    .orElseThrow();
            EmulatedBackend local = new EmulatedBackend(4, 1L << 30, TestKernels.twins());
            JobVgpus job = JobVgpus.open(
                    assembly,
                    new CudaOrdinals(Optional.of("0,1,2,3"), local, directory),
                    local,
                    RemoteConfig.defaults(),
                    reports::add,
                    MigrationFaults.NONE);
            try {
                MigratableGpu borrowed = job.vgpus().get(1);
                MigratableGpu own = job.vgpus().get(0);
                assertEquals(new MigrationTarget.RemoteWorker(Endpoint.parse(lend.endpoint())), borrowed.placement());

                // the app's data on the borrowed vGPU
                MigrationSegments data = MigrationSegments.pattern(arena);
                long address = borrowed.memAlloc(BYTES);
                borrowed.memcpyHtoD(address, data.written(), BYTES);
                RemoteCounters forwarded = borrowed.remoteCounters();
                assertTrue(forwarded.calls() >= 2 && forwarded.bytes() >= BYTES, forwarded.toString());
                String status = LineClient.request(directory.resolve("agent.sock"), "status", Duration.ofSeconds(10))
                        .getLast();
                assertTrue(
                        status.matches(".*vgpu 1 on " + Pattern.quote(lend.endpoint()) + " \\(remote\\), 1048576 B live"
                                + " in 1 allocations, 0 migrations, forwarded \\d+ calls and \\d+ B, waited \\d+ ms on"
                                + " the worker$"),
                        status);

                AgentChannel.Poll counted = awaitPoll(
                        tracker,
                        poll -> stat(poll, 1).calls() > 0
                                && stat(poll, 1).liveBytes() == BYTES
                                && stat(poll, 1).bytes() >= BYTES);
                assertEquals(LentWorkers.JOB, counted.credential().job());
                assertEquals(1, counted.credential().vgpu());
                assertEquals(lend.token(), counted.credential().token());
                assertEquals(
                        new AgentChannel.RemoteWorker(Endpoint.parse(lend.endpoint())),
                        stat(counted, 1).where());
                assertEquals(new AgentChannel.LocalGpu(0), stat(counted, 0).where());
                assertEquals(0, stat(counted, 0).calls(), "a local vGPU forwards nothing");

                // a command signed with another token is not the tracker's: refused, nothing granted, nothing moved
                tracker.send((poll, nonce) -> new AgentChannel.Migrate(
                        7,
                        1,
                        new AgentChannel.LocalGpu(2),
                        AgentChannel.mac("v1.forged.token", nonce, 7, 1, new AgentChannel.LocalGpu(2))));
                AgentChannel.Done forged = tracker.nextDone();
                assertEquals(7, forged.id());
                assertTrue(
                        ((AgentChannel.Failed) forged.outcome()).reason().contains("mac does not verify"),
                        forged.toString());
                assertEquals(new MigrationTarget.RemoteWorker(Endpoint.parse(lend.endpoint())), borrowed.placement());
                VgpuException notGranted =
                        assertThrows(VgpuException.class, () -> own.migrate(new MigrationTarget.LocalGpu(2)));
                assertTrue(
                        notGranted.getMessage().contains("GPU 2 of node n1 is not granted to job 42"),
                        notGranted.getMessage());

                // a command for a vGPU the job does not have
                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(), nonce, 8, 5, new AgentChannel.LocalGpu(2)));
                AgentChannel.Done unknown = tracker.nextDone();
                assertEquals(new AgentChannel.Failed("job 42 has no vGPU 5"), unknown.outcome());

                // a move that fails (no CUDA device drives GPU 7 here) leaves the vGPU where it was, the grant
                // withdrawn
                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(), nonce, 10, 1, new AgentChannel.LocalGpu(7)));
                AgentChannel.Done failed = tracker.nextDone();
                assertTrue(
                        ((AgentChannel.Failed) failed.outcome()).reason().contains("GPU 7 of this node is not in"),
                        failed.toString());
                assertEquals(new MigrationTarget.RemoteWorker(Endpoint.parse(lend.endpoint())), borrowed.placement());
                VgpuException withdrawn =
                        assertThrows(VgpuException.class, () -> own.migrate(new MigrationTarget.LocalGpu(7)));
                assertTrue(withdrawn.getMessage().contains("GPU 7 of node n1 is not granted"), withdrawn.getMessage());

                // a drain: the tracker moves vGPU 1 to another lender with a fresh session token, remote to remote
                LentWorkers.Lend other = lenders.lend(1, 1);
                Endpoint otherWorker = Endpoint.parse(other.endpoint());
                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(),
                        nonce,
                        11,
                        1,
                        new AgentChannel.RemoteTarget(otherWorker, other.token())));
                assertInstanceOf(
                        AgentChannel.Succeeded.class, tracker.nextDone().outcome());
                assertEquals(new MigrationTarget.RemoteWorker(otherWorker), borrowed.placement());
                assertEquals("remote", borrowed.backendName());
                assertTrue(
                        borrowed.remoteCounters().calls() > forwarded.calls(),
                        "the counters go on from the first worker's: " + borrowed.remoteCounters());

                // the tracker's own command: vGPU 1 comes home onto the freed GPU 2
                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(), nonce, 9, 1, new AgentChannel.LocalGpu(2)));
                AgentChannel.Done done = tracker.nextDone();
                assertEquals(9, done.id());
                AgentChannel.Succeeded moved = assertInstanceOf(AgentChannel.Succeeded.class, done.outcome());
                assertEquals(BYTES, moved.bytes());
                assertEquals(reports.getLast().blocked().toMillis(), moved.blockedMs());
                assertEquals(new MigrationTarget.LocalGpu(2), borrowed.placement());
                assertEquals("emulated", borrowed.backendName());
                assertEquals(RemoteCounters.ZERO, borrowed.remoteCounters());
                borrowed.memcpyDtoH(data.read(), address, BYTES);
                assertArrayEquals(data.expected(), data.read().toArray(ValueLayout.JAVA_BYTE), "the data came home");

                awaitPoll(tracker, poll -> stat(poll, 1).where().equals(new AgentChannel.LocalGpu(2)));
                // GPU 2 is the job's now: a user may move its other vGPU there too
                assertTrue(own.migrate(new MigrationTarget.LocalGpu(2)).migrated());
            } finally {
                job.close();
            }
            int polled = tracker.polls.size();
            Thread.sleep(600);
            assertEquals(polled, tracker.polls.size(), "closing the job's vGPUs stops the polling");
        }
    }

    @Test
    void aJobThatStartedWithNoGpuAdmittedDrivesTheGrantedGpuOnceTheDriverSeesIt() throws Exception {
        List<MigrationReport> reports = new CopyOnWriteArrayList<>();
        AtomicBoolean admitted = new AtomicBoolean();
        // the native loader's stand-in: no device until the grant's cgroup admission, then the node's GPUs
        DeferredNativeBackend local = new DeferredNativeBackend(
                () -> {
                    if (!admitted.get()) {
                        throw new VgpuException(ErrorCode.VGPU_BACKEND_UNAVAILABLE, "every GPU refused (stand-in)");
                    }
                    return new EmulatedBackend(4, 1L << 30, TestKernels.twins());
                },
                "every GPU refused (stand-in)");
        try (LentWorkers lenders = new LentWorkers();
                FakeTracker tracker = new FakeTracker();
                Arena arena = Arena.ofConfined()) {
            LentWorkers.Lend lend = lenders.lend(0, 0);
            Map<String, String> environment = new HashMap<>();
            environment.put("VGPU_COUNT", "1");
            environment.put("VGPU_ASSEMBLY", lend.assemblyEntry());
            environment.put("VGPU_LOCAL_GPUS", "");
            environment.put("VGPU_REMOTE", lend.remoteEntry());
            environment.put("VGPU_AGENT_SOCKET", directory.resolve("agent.sock").toString());
            environment.put("VGPU_NODE", "n1");
            environment.put("VGPU_TRACKER", tracker.address());
            environment.put("SLURM_JOB_ID", LentWorkers.JOB);
            JobAssembly assembly = JobAssembly.fromEnvironment(environment).orElseThrow();
            try (JobVgpus job = JobVgpus.open(
                    assembly,
                    new CudaOrdinals(Optional.empty(), local, directory),
                    local,
                    RemoteConfig.defaults(),
                    reports::add,
                    MigrationFaults.NONE)) {
                MigratableGpu borrowed = job.vgpus().getFirst();
                MigrationSegments data = MigrationSegments.pattern(arena);
                long address = borrowed.memAlloc(BYTES);
                borrowed.memcpyHtoD(address, data.written(), BYTES);
                assertFalse(local.loaded(), "no GPU admitted at the start");

                // granted but not yet admitted by the cgroup: the move fails saying so, the vGPU stays remote
                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(), nonce, 1, 0, new AgentChannel.LocalGpu(2)));
                AgentChannel.Failed early = assertInstanceOf(
                        AgentChannel.Failed.class, tracker.nextDone().outcome());
                assertTrue(early.reason().contains("no GPU of this node is admitted to this job yet"), early.reason());
                assertEquals(new MigrationTarget.RemoteWorker(Endpoint.parse(lend.endpoint())), borrowed.placement());

                admitted.set(true);
                tracker.send((poll, nonce) -> AgentChannel.Migrate.signed(
                        poll.credential().token(), nonce, 2, 0, new AgentChannel.LocalGpu(2)));
                assertInstanceOf(
                        AgentChannel.Succeeded.class, tracker.nextDone().outcome());
                assertTrue(local.loaded());
                assertEquals(new MigrationTarget.LocalGpu(2), borrowed.placement());
                borrowed.memcpyDtoH(data.read(), address, BYTES);
                assertArrayEquals(data.expected(), data.read().toArray(ValueLayout.JAVA_BYTE), "the data came home");
            }
        }
    }

    @Test
    void theUsersExpectedRuntimeRidesInEveryPollAsTheJobsEnd() throws Exception {
        try (LentWorkers lenders = new LentWorkers();
                FakeTracker tracker = new FakeTracker()) {
            LentWorkers.Lend lend = lenders.lend(1, 0);
            Map<String, String> environment = environment(lend, tracker, directory.resolve("agent.sock"));
            environment.put("VGPU_EXPECTED_RUNTIME", "2h");
            JobAssembly assembly = JobAssembly.fromEnvironment(environment).orElseThrow();
            EmulatedBackend local = new EmulatedBackend(4, 1L << 30, TestKernels.twins());
            Instant before = Instant.now().truncatedTo(ChronoUnit.SECONDS);
            try (JobVgpus _ = JobVgpus.open(
                    assembly,
                    new CudaOrdinals(Optional.of("0,1,2,3"), local, directory),
                    local,
                    RemoteConfig.defaults(),
                    report -> {},
                    MigrationFaults.NONE)) {
                Instant after = Instant.now();
                AgentChannel.Poll poll = awaitPoll(tracker, candidate -> true);
                Instant end = poll.expectedEnd().orElseThrow(() -> new AssertionError("no hint in " + poll));
                assertFalse(end.isBefore(before.plus(Duration.ofHours(2))), end + " is before " + before + " + 2 h");
                assertFalse(end.isAfter(after.plus(Duration.ofHours(2))), end + " is after " + after + " + 2 h");
            }
        }
    }

    @Test
    void aJobWithoutBorrowedVgpusDoesNotPoll() throws Exception {
        try (FakeTracker tracker = new FakeTracker()) {
            Map<String, String> environment = new HashMap<>();
            environment.put("VGPU_COUNT", "1");
            environment.put("VGPU_ASSEMBLY", "0=local:0");
            environment.put("VGPU_LOCAL_GPUS", "0");
            environment.put("VGPU_TRACKER", tracker.address());
            environment.put("SLURM_JOB_ID", "43");
            JobAssembly assembly = JobAssembly.fromEnvironment(environment).orElseThrow();
            EmulatedBackend local = new EmulatedBackend(1, 1L << 30, TestKernels.twins());
            try (JobVgpus job = JobVgpus.open(
                    assembly,
                    new CudaOrdinals(Optional.empty(), local, directory),
                    local,
                    RemoteConfig.defaults(),
                    report -> {},
                    MigrationFaults.NONE)) {
                Thread.sleep(500);
                assertEquals(Optional.empty(), job.trackerProblem());
            }
            assertEquals(List.of(), tracker.polls);
        }
    }

    private static AgentChannel.Stat stat(AgentChannel.Poll poll, int vgpu) {
        return poll.stats().stream()
                .filter(stat -> stat.vgpu() == vgpu)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no stat of vGPU " + vgpu + " in " + poll));
    }

    private static AgentChannel.Poll awaitPoll(FakeTracker tracker, Predicate<AgentChannel.Poll> wanted)
            throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < deadline) {
            for (AgentChannel.Poll poll : tracker.polls) {
                if (wanted.test(poll)) {
                    return poll;
                }
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no poll as expected within 30 s: " + tracker.polls);
    }

    /** A megabyte written to a vGPU and the buffer it is read back into. */
    private record MigrationSegments(MemorySegment written, MemorySegment read, byte[] expected) {
        static MigrationSegments pattern(Arena arena) {
            byte[] bytes = new byte[BYTES];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) (i * 31 + (i >> 12));
            }
            MemorySegment written = arena.allocate(BYTES);
            written.copyFrom(MemorySegment.ofArray(bytes));
            return new MigrationSegments(written, arena.allocate(BYTES), bytes);
        }
    }
}
