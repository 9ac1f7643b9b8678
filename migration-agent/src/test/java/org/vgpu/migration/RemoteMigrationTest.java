package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import org.vgpu.common.error.InputException;
import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.transport.SameHostBulk;
import org.vgpu.runtime.remote.transport.StripedBulk;
import org.vgpu.runtime.remote.worker.WorkerReport;
import org.vgpu.runtime.workloads.LennardJonesWorkload;
import org.vgpu.runtime.workloads.PointerChaseWorkload;
import org.vgpu.runtime.workloads.Workload;
import org.vgpu.runtime.workloads.WorkloadResult;

/**
 * Every direction with the real remote runtime: GPU workers in this JVM (on the CPU emulation)
 * serve the remote side. Remote to local stands for the mission (remote to native), local to
 * remote for evacuating a local GPU, remote to remote for draining a lender.
 */
@Timeout(120)
class RemoteMigrationTest {
    private static final long SEED = 11;

    enum Direction {
        LOCAL_TO_REMOTE,
        REMOTE_TO_LOCAL,
        REMOTE_TO_REMOTE
    }

    static Stream<Arguments> directionsAndWorkloads() {
        return Stream.of(Direction.values())
                .flatMap(direction -> Stream.of(
                        Arguments.of(direction, new LennardJonesWorkload()),
                        Arguments.of(direction, new PointerChaseWorkload())));
    }

    @ParameterizedTest(name = "{0}, {1} migrated half-way")
    @MethodSource("directionsAndWorkloads")
    void everyDirectionMidRunReadsBackTheSameBits(Direction direction, Workload workload) throws Exception {
        try (Emulation local = new Emulation(2);
                LocalWorkers workers = new LocalWorkers()) {
            Transcript reference;
            WorkloadResult unmigrated;
            try (VirtualGpu plain = local.backend.open(0, VaWindow.forVgpu(2))) {
                reference = new Transcript(plain);
                unmigrated = workload.run(reference, 1, SEED);
            }
            TargetResolver resolver = new NodeTargetResolver(local.backend, workers.resolver);
            VaWindow window = VaWindow.forVgpu(2);
            MigrationTarget.RemoteWorker sourceWorker =
                    direction == Direction.LOCAL_TO_REMOTE ? null : workers.start(0);
            MigrationTarget start = sourceWorker == null ? Emulation.gpu(0) : sourceWorker;
            MigrationTarget target = direction == Direction.REMOTE_TO_LOCAL ? Emulation.gpu(1) : workers.start(1);
            VirtualGpu initial = sourceWorker == null
                    ? local.backend.open(0, window)
                    : workers.resolver.open(sourceWorker, window, null);
            try (MigratableGpu gpu = new MigratableGpu(
                    initial, start, resolver, Emulation.VERIFIED, MigrationListener.NONE, MigrationFaults.NONE)) {
                MigrateAfterLaunches trigger =
                        new MigrateAfterLaunches(gpu, Math.max(1, reference.launches() / 2), target, Runnable::run);
                Transcript migrated = new Transcript(trigger);
                WorkloadResult result = workload.run(migrated, 1, SEED);

                assertNotNull(trigger.migration().getNow(null), "the migration happened");
                assertTrue(result.passed(), result.errorSummary());
                assertEquals(unmigrated.comparison(), result.comparison());
                assertEquals(reference.digest(), migrated.digest(), "bytes read back differ from the unmigrated run");
                assertEquals(
                        target + " (" + (target instanceof MigrationTarget.LocalGpu ? "emulated" : "remote") + ")",
                        gpu.location());
                if (sourceWorker != null) {
                    WorkerReport served = workers.worker(sourceWorker).report().get(30, TimeUnit.SECONDS);
                    assertTrue(served.clean(), "the source worker's session ended cleanly: " + served.endReason());
                }
            }
        }
    }

    /**
     * A worker serves one session: before the refusal a migration onto the worker the vGPU runs on failed with that
     * worker's "already serves a session", as though the worker were busy with someone else.
     */
    @Test
    void aMigrationToTheWorkerTheVgpuRunsOnIsRefusedAndTheVgpuRunsOn() {
        try (Emulation local = new Emulation(1);
                LocalWorkers workers = new LocalWorkers()) {
            MigrationTarget.RemoteWorker worker = workers.start(0);
            VaWindow window = VaWindow.forVgpu(1);
            try (MigratableGpu gpu = new MigratableGpu(
                    workers.resolver.open(worker, window, null),
                    worker,
                    new NodeTargetResolver(local.backend, workers.resolver),
                    Emulation.VERIFIED,
                    MigrationListener.NONE,
                    MigrationFaults.NONE)) {
                long data = gpu.memAlloc(4096);
                gpu.memcpyHtoD(data, MemorySegment.ofArray(new int[] {4, 5, 6}), 12);

                InputException refused = assertThrows(InputException.class, () -> gpu.migrate(worker));
                assertEquals(
                        "vGPU 1 already runs on " + worker + " (remote): there is nothing to migrate",
                        refused.detail());
                assertEquals(0, gpu.migrationCount());
                int[] back = new int[3];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), data, 12);
                assertArrayEquals(new int[] {4, 5, 6}, back, "the session on the worker goes on");
            }
        }
    }

    /**
     * A move home from a worker the session stripes to, as to a worker on another host (shared memory off): the
     * mem-sync's batches, gathers in flight at once into the staging buffers, are read by the stripes straight into
     * those buffers, and the state arrives intact.
     */
    @Test
    void aMoveHomeOverStripesReadsTheMemSyncStraightIntoItsBuffersAndTheStateArrivesIntact() {
        System.setProperty(SameHostBulk.PROPERTY, "off");
        System.setProperty(StripedBulk.MODE_PROPERTY, "always");
        try (Emulation local = new Emulation(2);
                LocalWorkers workers = new LocalWorkers()) {
            Journey journey = Journey.of(Direction.REMOTE_TO_LOCAL, local, workers);
            RemoteGpu remote = (RemoteGpu) journey.first();
            assertTrue(remote.bulkPathDescription().startsWith("striped"), remote.bulkPathDescription());
            try (MigratableGpu gpu = journey.gpu()) {
                // 24 MiB and a bit in three allocations: batches of 3 MiB, several gathers in flight at once
                byte[][] states = new byte[3][];
                long[] addresses = new long[3];
                Random random = new Random(SEED);
                for (int i = 0; i < 3; i++) {
                    states[i] = new byte[(8 << 20) + 4096 * i + 12];
                    random.nextBytes(states[i]);
                    addresses[i] = gpu.memAlloc(states[i].length);
                    gpu.memcpyHtoD(addresses[i], MemorySegment.ofArray(states[i]), states[i].length);
                }
                long before = remote.chunksReadStraightIn();

                gpu.migrate(journey.target());

                assertTrue(remote.chunksReadStraightIn() > before, "the mem-sync's chunks were read straight in");
                for (int i = 0; i < 3; i++) {
                    byte[] back = new byte[states[i].length];
                    gpu.memcpyDtoH(MemorySegment.ofArray(back), addresses[i], back.length);
                    assertArrayEquals(states[i], back, "allocation " + i);
                }
            }
        } finally {
            System.clearProperty(SameHostBulk.PROPERTY);
            System.clearProperty(StripedBulk.MODE_PROPERTY);
        }
    }

    /** A vGPU of window 1 on the source of {@code direction}, the backend's vGPU it starts on, and its target. */
    private record Journey(MigratableGpu gpu, VirtualGpu first, MigrationTarget target) {
        static Journey of(Direction direction, Emulation local, LocalWorkers workers) {
            MigrationTarget.RemoteWorker sourceWorker =
                    direction == Direction.LOCAL_TO_REMOTE ? null : workers.start(0);
            MigrationTarget start = sourceWorker == null ? Emulation.gpu(0) : sourceWorker;
            MigrationTarget target = direction == Direction.REMOTE_TO_LOCAL ? Emulation.gpu(1) : workers.start(1);
            VaWindow window = VaWindow.forVgpu(1);
            VirtualGpu initial = sourceWorker == null
                    ? local.backend.open(0, window)
                    : workers.resolver.open(sourceWorker, window, null);
            MigratableGpu gpu = new MigratableGpu(
                    initial,
                    start,
                    new NodeTargetResolver(local.backend, workers.resolver),
                    Emulation.VERIFIED,
                    MigrationListener.NONE,
                    MigrationFaults.NONE);
            return new Journey(gpu, initial, target);
        }
    }

    /**
     * Module variables keep their addresses and contents, and set kernel attributes and context
     * limits hold, in every direction: onto a worker the client's address of a variable stands for
     * the worker's, which stands for its backend's.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Direction.class)
    void moduleVariablesKernelAttributesAndContextLimitsMoveInEveryDirection(Direction direction) {
        try (Emulation local = new Emulation(2);
                LocalWorkers workers = new LocalWorkers()) {
            Journey journey = Journey.of(direction, local, workers);
            MigrationTarget target = journey.target();
            try (MigratableGpu gpu = journey.gpu()) {
                String variables = """
                        .version 8.0
                        .target sm_80
                        .address_size 64
                        .visible .global .align 4 .u32 pad[100];
                        .visible .const .align 4 .u32 table[4] = {1, 2, 3, 4};
                        """;
                ModuleHandle module = gpu.moduleLoadData(variables.getBytes(StandardCharsets.US_ASCII));
                DeviceRegion table = gpu.moduleGetGlobal(module, "table");
                gpu.memcpyHtoD(table.address() + 4, MemorySegment.ofArray(new int[] {6, 7}), 8);
                FunctionHandle empty = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), "emptyKernel");
                gpu.funcSetAttribute(empty, FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, 64 << 10);
                gpu.ctxSetLimit(ContextLimit.MALLOC_HEAP_SIZE, 96L << 20);
                gpu.ctxSetLimit(ContextLimit.STACK_SIZE, 32 << 10);

                gpu.migrate(target);

                assertEquals(32 << 10, gpu.ctxGetLimit(ContextLimit.STACK_SIZE), "the target's context has it too");
                assertEquals(96L << 20, gpu.ctxGetLimit(ContextLimit.MALLOC_HEAP_SIZE));
                assertEquals(
                        ContextLimit.PRINTF_FIFO_SIZE.cudaDefault(), gpu.ctxGetLimit(ContextLimit.PRINTF_FIFO_SIZE));

                assertEquals(table, gpu.moduleGetGlobal(module, "table"), "the address the program holds");
                int[] back = new int[4];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), table.address(), 16);
                assertArrayEquals(new int[] {1, 6, 7, 4}, back);
                assertEquals(64 << 10, gpu.funcGetAttribute(FunctionAttribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, empty));
                gpu.launchKernel(empty, Dim3.of(1), Dim3.of(32), 64 << 10, StreamHandle.DEFAULT, KernelArgs.none());
                gpu.ctxSynchronize();
            }
        }
    }

    /**
     * A state of 10,000 allocations of 4 KiB (20 shared chunks) moves in every direction with its
     * data, the target maps the chunks (a worker in one request) and its layout is the source's:
     * an address freed before the move is the one handed out after it.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Direction.class)
    void tenThousandSmallAllocationsMoveWithTheirDataAndLayout(Direction direction) {
        try (Emulation local = new Emulation(2);
                LocalWorkers workers = new LocalWorkers()) {
            Journey journey = Journey.of(direction, local, workers);
            MigrationTarget target = journey.target();
            try (MigratableGpu gpu = journey.gpu()) {
                int bytes = 4096;
                List<DeviceRegion> allocations = new ArrayList<>();
                for (int i = 0; i < 10_000; i++) {
                    allocations.add(new DeviceRegion(gpu.memAlloc(bytes), bytes));
                }
                long hole = allocations.get(4321).address();
                gpu.memFree(hole);
                allocations.remove(4321);
                MemorySegment pattern = gpu.memAllocHost((long) allocations.size() * bytes);
                for (long i = 0; i < pattern.byteSize() / 8; i++) {
                    pattern.setAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG, i, i * 0x9E3779B97F4A7C15L);
                }
                gpu.memcpyHtoDScatterAsync(allocations, pattern, StreamHandle.DEFAULT);
                gpu.ctxSynchronize();
                long usedBefore = gpu.memGetInfo().total() - gpu.memGetInfo().free();

                MigrationReport report = gpu.migrate(target);

                assertEquals(allocations.size(), report.memSyncRegions(), report.summary());
                assertEquals(
                        usedBefore, gpu.memGetInfo().total() - gpu.memGetInfo().free(), "20 chunks, not 9,999");
                MemorySegment back = gpu.memAllocHost(pattern.byteSize());
                gpu.memcpyDtoHGatherAsync(back, allocations, StreamHandle.DEFAULT);
                gpu.ctxSynchronize();
                assertEquals(-1L, back.mismatch(pattern), "every allocation's bytes after the move");
                assertEquals(hole, gpu.memAlloc(bytes), "the hole left before the move is filled first");
                gpu.memFreeHost(pattern);
                gpu.memFreeHost(back);
            }
        }
    }

    /**
     * Page-locked memory of a vGPU whose worker is on this host is a region that worker shares; after the vGPU moved
     * (to a local GPU or another worker) it stays valid, copies from and into it carry the right bytes on the new
     * device, and freeing it ends the source's session, which was kept for it.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = Direction.class,
            names = {"REMOTE_TO_LOCAL", "REMOTE_TO_REMOTE"})
    void pinnedMemorySharedWithTheSourceWorkerStaysValidAcrossAMove(Direction direction) throws Exception {
        try (Emulation local = new Emulation(1);
                LocalWorkers workers = new LocalWorkers()) {
            MigrationTarget.RemoteWorker source = workers.start(0);
            MigrationTarget target = direction == Direction.REMOTE_TO_LOCAL ? Emulation.gpu(0) : workers.start(1);
            RemoteGpu onSource = (RemoteGpu) workers.resolver.open(source, VaWindow.forVgpu(1), null);
            try (MigratableGpu gpu = new MigratableGpu(
                    onSource,
                    source,
                    new NodeTargetResolver(local.backend, workers.resolver),
                    Emulation.VERIFIED,
                    MigrationListener.NONE,
                    MigrationFaults.NONE)) {
                int bytes = 1 << 20;
                MemorySegment pinned = gpu.memAllocHost(bytes);
                assertEquals(1, onSource.sharedHostAllocations(), "a region the source worker shares");
                byte[] expected = new byte[bytes];
                new Random(SEED).nextBytes(expected);
                pinned.copyFrom(MemorySegment.ofArray(expected));
                long device = gpu.memAlloc(bytes);
                gpu.memcpyHtoD(device, pinned, bytes);

                gpu.migrate(target);

                pinned.fill((byte) 0);
                gpu.memcpyDtoH(pinned, device, bytes);
                assertArrayEquals(expected, pinned.toArray(ValueLayout.JAVA_BYTE), "the device's bytes, moved");
                gpu.memcpyHtoD(device, pinned.asSlice(4096), 4096);
                byte[] first = new byte[4096];
                gpu.memcpyDtoH(MemorySegment.ofArray(first), device, 4096);
                assertEquals(
                        -1,
                        MemorySegment.ofArray(first)
                                .mismatch(MemorySegment.ofArray(expected).asSlice(4096, 4096)),
                        "a copy from the region on the new device");
                gpu.memFreeHost(pinned);
                WorkerReport served = workers.worker(source).report().get(30, TimeUnit.SECONDS);
                assertTrue(served.clean(), "the source's session, kept for the memory, ended: " + served.endReason());
            }
        }
    }

    /**
     * Hundreds of small regions of odd sizes, read from a remote source in gathering requests that
     * cross the staging buffers' boundaries, arrive bit for bit (the migration's own verification
     * compares both sides too), and the app reads back what it wrote.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = Direction.class,
            names = {"REMOTE_TO_LOCAL", "REMOTE_TO_REMOTE"})
    void manySmallRegionsFromARemoteSourceArriveBitIdentical(Direction direction) {
        try (Emulation local = new Emulation(1);
                LocalWorkers workers = new LocalWorkers()) {
            MigrationTarget.RemoteWorker source = workers.start(0);
            MigrationTarget target = direction == Direction.REMOTE_TO_LOCAL ? Emulation.gpu(0) : workers.start(1);
            VaWindow window = VaWindow.forVgpu(1);
            MigrationConfig smallBuffers = Emulation.VERIFIED.withChunkBytes(64 << 10);
            try (MigratableGpu gpu = new MigratableGpu(
                    workers.resolver.open(source, window, null),
                    source,
                    new NodeTargetResolver(local.backend, workers.resolver),
                    smallBuffers,
                    MigrationListener.NONE,
                    MigrationFaults.NONE)) {
                Random random = new Random(SEED);
                List<Long> addresses = new ArrayList<>();
                List<byte[]> contents = new ArrayList<>();
                for (int i = 0; i < 300; i++) {
                    byte[] bytes = new byte[1 + random.nextInt(i % 10 == 0 ? 100_000 : 6000)];
                    random.nextBytes(bytes);
                    long address = gpu.memAlloc(bytes.length);
                    gpu.memcpyHtoD(address, MemorySegment.ofArray(bytes), bytes.length);
                    addresses.add(address);
                    contents.add(bytes);
                }
                MigrationReport report = gpu.migrate(target);
                assertEquals(300, report.memSyncRegions(), report.summary());
                assertEquals(contents.stream().mapToLong(b -> b.length).sum(), report.memSyncBytes(), report.summary());
                for (int i = 0; i < addresses.size(); i++) {
                    byte[] back = new byte[contents.get(i).length];
                    gpu.memcpyDtoH(MemorySegment.ofArray(back), addresses.get(i), back.length);
                    assertArrayEquals(contents.get(i), back, "region " + i + " after the migration");
                }
            }
        }
    }

    /**
     * The target worker dies while the memory is copied to it, from a local GPU or forwarded chunk by
     * chunk from the source's worker: the migration rolls back and the app goes on at its source.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = Direction.class,
            names = {"LOCAL_TO_REMOTE", "REMOTE_TO_REMOTE"})
    void aTargetWorkerThatDiesDuringTheCopyIsRolledBack(Direction direction) {
        try (Emulation local = new Emulation(1);
                LocalWorkers workers = new LocalWorkers()) {
            MigrationTarget start = direction == Direction.LOCAL_TO_REMOTE ? Emulation.gpu(0) : workers.start(0);
            MigrationTarget.RemoteWorker target = workers.start(0);
            MigrationFaults killTarget = (point, index, opened) -> {
                if (point == FaultPoint.MEM_SYNC_BATCH && index == 2) {
                    workers.worker(target).close();
                }
            };
            MigrationConfig smallChunks = Emulation.VERIFIED.withChunkBytes(64 << 10);
            VirtualGpu initial = start instanceof MigrationTarget.RemoteWorker sourceWorker
                    ? workers.resolver.open(sourceWorker, VaWindow.forVgpu(0), null)
                    : local.backend.open(0, VaWindow.forVgpu(0));
            try (MigratableGpu gpu = new MigratableGpu(
                    initial,
                    start,
                    new NodeTargetResolver(local.backend, workers.resolver),
                    smallChunks,
                    MigrationListener.NONE,
                    killTarget)) {
                long data = gpu.memAlloc(1 << 20);
                gpu.memsetD32(data, 0xFEEDFACE, (1 << 20) / 4);
                MigrationException failure = assertThrows(MigrationException.class, () -> gpu.migrate(target));
                assertEquals(MigrationStep.MEM_SYNC, failure.failedStep(), failure.getMessage());
                assertEquals(ErrorCode.VGPU_WORKER_LOST, failure.code(), failure.getMessage());
                assertEquals(start + " (" + initial.backendName() + ")", gpu.location());
                int[] back = new int[(1 << 20) / 4];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), data, 1 << 20);
                for (int word : back) {
                    assertEquals(0xFEEDFACE, word);
                }
            }
        }
    }

    @Test
    void aWorkerNotLentToTheJobIsRefused() {
        try (Emulation local = new Emulation(1);
                LocalWorkers workers = new LocalWorkers();
                MigratableGpu gpu = new MigratableGpu(
                        local.backend.open(0, VaWindow.forVgpu(0)),
                        Emulation.gpu(0),
                        new NodeTargetResolver(local.backend, workers.resolver),
                        Emulation.VERIFIED,
                        MigrationListener.NONE,
                        MigrationFaults.NONE)) {
            MigrationException refused =
                    assertThrows(MigrationException.class, () -> gpu.migrate(MigrationTarget.parse("127.0.0.1:1")));
            assertEquals(ErrorCode.VGPU_AUTH_FAILED, refused.code());
            assertEquals(MigrationStep.OPEN_TARGET, refused.failedStep());
        }
    }
}
