package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.DeviceRegion;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.ForwardingGpuBackend;
import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.KernelTwinRegistry;
import org.vgpu.runtime.kernels.TestKernels;

/** Handles, host memory, errors and the migration lock of a MigratableGpu. */
@Timeout(60)
class MigratableGpuTest {
    /** Own threads: the common pool may have a single worker on a 2-core CI machine, which a blocked call would hold. */
    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    /**
     * One thread frees an allocation while another allocates as much: the backend may give the second
     * the address the first just freed, and the log must end with the second's allocation, which a
     * migration replays (were it lost, the target would give its address out again, to a third).
     */
    @Test
    void anAllocationThatReusesAnAddressBeingFreedStaysInTheLog() throws Exception {
        long bytes = 4096;
        try (Emulation emulation = new Emulation(2)) {
            AtomicReference<MigratableGpu> app = new AtomicReference<>();
            AtomicReference<Long> reused = new AtomicReference<>();
            // frees, then lets another thread allocate before the free returns
            VirtualGpu source = new ForwardingVirtualGpu(emulation.backend.open(0, VaWindow.forVgpu(0))) {
                @Override
                public void memFree(long address) {
                    super.memFree(address);
                    CompletableFuture<Long> other =
                            CompletableFuture.supplyAsync(() -> app.get().memAlloc(bytes), threads);
                    reused.set(other.join());
                }
            };
            try (MigratableGpu gpu = emulation.wrap(source)) {
                app.set(gpu);
                long first = gpu.memAlloc(bytes);
                gpu.memFree(first);
                assertEquals(first, reused.get(), "first fit gives the freed address out again");
                assertEquals(bytes, gpu.liveBytes(), "the second allocation is in the log");
                gpu.migrate(Emulation.gpu(1));
                gpu.memsetD8(first, (byte) 7, bytes);
                assertEquals(new DeviceRegion(first, bytes), gpu.memGetAddressRange(first), "and on the target");
            }
        }
    }

    /**
     * The replay runs ahead of the lock while the app goes on: what the app unloads, destroys, frees,
     * loads, creates and allocates meanwhile (here from the replay's own hook, deterministically
     * between the two passes) is what the vGPU has on its target.
     */
    @Test
    void whatTheAppChangesWhileTheReplayRunsAheadIsWhatItFindsOnTheTarget() {
        AtomicReference<Runnable> meanwhile = new AtomicReference<>();
        MigrationFaults appGoesOn = (point, index, target) -> {
            Runnable changes = point == FaultPoint.REPLAY_ALLOCATION && index == 0 ? meanwhile.getAndSet(null) : null;
            if (changes != null) {
                changes.run();
            }
        };
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0, Emulation.VERIFIED, MigrationListener.NONE, appGoesOn)) {
            ModuleHandle unloaded = gpu.moduleLoadData(TestKernels.ptx());
            FunctionHandle orphan = gpu.moduleGetFunction(unloaded, TestKernels.SAXPY);
            StreamHandle destroyed = gpu.streamCreate();
            EventHandle gone = gpu.eventCreate();
            int n = 1000;
            long x = gpu.memAlloc(n * 4L);
            long freed = gpu.memAlloc(3 << 20);
            gpu.memsetD32(x, Float.floatToRawIntBits(2f), n);
            ModuleHandle[] loaded = new ModuleHandle[1];
            StreamHandle[] created = new StreamHandle[1];
            EventHandle[] recorded = new EventHandle[1];
            long[] y = new long[1];
            meanwhile.set(() -> {
                gpu.moduleUnload(unloaded);
                gpu.streamDestroy(destroyed);
                gpu.eventDestroy(gone);
                gpu.memFree(freed);
                loaded[0] = gpu.moduleLoadData(TestKernels.ptx());
                created[0] = gpu.streamCreate();
                recorded[0] = gpu.eventCreate();
                y[0] = gpu.memAlloc(n * 4L);
                gpu.memsetD32(y[0], Float.floatToRawIntBits(1f), n);
            });

            gpu.migrate(Emulation.gpu(1));
            assertEquals(null, meanwhile.get(), "the app's changes came between the two passes");

            FunctionHandle saxpy = gpu.moduleGetFunction(loaded[0], TestKernels.SAXPY);
            KernelArgs args =
                    KernelArgs.builder().i32(n).f32(3f).pointer(x).pointer(y[0]).build();
            gpu.launchKernel(saxpy, Dim3.of(4), Dim3.of(256), 0, created[0], args);
            gpu.eventRecord(recorded[0], created[0]);
            gpu.eventSynchronize(recorded[0]);
            float[] result = new float[n];
            gpu.memcpyDtoH(MemorySegment.ofArray(result), y[0], n * 4L);
            for (float value : result) {
                assertEquals(7f, value);
            }
            assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamSynchronize(destroyed));
            assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.eventRecord(gone, created[0]));
            assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.functionSignature(orphan));
            assertError(ErrorCode.CUDA_ERROR_NOT_FOUND, () -> gpu.memGetAddressRange(freed));
            assertTrue(
                    emulation.usedBytes(1) < 3 << 20,
                    "the target does not keep the 3 MiB freed meanwhile: " + emulation.usedBytes(1) + " bytes used");
        }
    }

    @Test
    void handlesStayValidAcrossMigrationsAlsoWhenOthersWereDestroyed() {
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0)) {
            ModuleHandle unloaded = gpu.moduleLoadData(TestKernels.ptx());
            FunctionHandle orphan = gpu.moduleGetFunction(unloaded, TestKernels.SAXPY);
            ModuleHandle kernels = gpu.moduleLoadData(TestKernels.ptx());
            gpu.moduleUnload(unloaded);
            FunctionHandle saxpy = gpu.moduleGetFunction(kernels, TestKernels.SAXPY);
            StreamHandle first = gpu.streamCreate();
            StreamHandle destroyed = gpu.streamCreate();
            StreamHandle third = gpu.streamCreate();
            gpu.streamDestroy(destroyed);
            EventHandle gone = gpu.eventCreate();
            EventHandle event = gpu.eventCreate();
            gpu.eventDestroy(gone);
            int n = 1000;
            long x = gpu.memAlloc(n * 4L);
            long y = gpu.memAlloc(n * 4L);
            gpu.memsetD32(x, Float.floatToRawIntBits(2f), n);
            gpu.memsetD32(y, Float.floatToRawIntBits(1f), n);

            gpu.migrate(Emulation.gpu(1));

            KernelArgs args =
                    KernelArgs.builder().i32(n).f32(3f).pointer(x).pointer(y).build();
            gpu.launchKernel(saxpy, Dim3.of(4), Dim3.of(256), 0, first, args);
            gpu.launchKernel(saxpy, Dim3.of(4), Dim3.of(256), 0, third, args);
            gpu.eventRecord(event, third);
            gpu.eventSynchronize(event);
            gpu.streamSynchronize(first);
            float[] result = new float[n];
            gpu.memcpyDtoH(MemorySegment.ofArray(result), y, n * 4L);
            for (float value : result) {
                assertEquals(13f, value);
            }
            assertEquals(List.of(4, 4, 8, 8), gpu.functionSignature(saxpy).parameterSizes());
            assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.streamSynchronize(destroyed));
            assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.eventRecord(gone, first));
            assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.moduleGetFunction(unloaded, TestKernels.SAXPY));
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                    () -> gpu.functionSignature(orphan),
                    "a function of an unloaded module is gone with it");
            gpu.streamDestroy(first);
            gpu.streamDestroy(third);
            gpu.eventDestroy(event);
        }
    }

    @Test
    void repeatedLookupsOfAKernelGetOneHandleAcrossMigrations() {
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0)) {
            ModuleHandle kernels = gpu.moduleLoadData(TestKernels.ptx());
            FunctionHandle first = gpu.moduleGetFunction(kernels, TestKernels.EMPTY_KERNEL);
            for (int i = 0; i < 10_000; i++) {
                assertEquals(first, gpu.moduleGetFunction(kernels, TestKernels.EMPTY_KERNEL));
            }
            gpu.migrate(Emulation.gpu(1));
            assertEquals(first, gpu.moduleGetFunction(kernels, TestKernels.EMPTY_KERNEL));
            gpu.launchKernel(first, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, KernelArgs.none());
            gpu.moduleUnload(kernels);
            ModuleHandle reloaded = gpu.moduleLoadData(TestKernels.ptx());
            FunctionHandle fresh = gpu.moduleGetFunction(reloaded, TestKernels.EMPTY_KERNEL);
            assertTrue(fresh.id() != first.id(), "a function of a reloaded module is a new handle");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                    () -> gpu.launchKernel(first, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, KernelArgs.none()));
        }
    }

    @Test
    void pinnedHostMemoryOutlivesTheBackendThatAllocatedIt() {
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0)) {
            long bytes = 1 << 20;
            MemorySegment pinned = gpu.memAllocHost(bytes);
            for (long i = 0; i < bytes / 8; i++) {
                pinned.setAtIndex(ValueLayout.JAVA_LONG, i, i * 31);
            }
            long device = gpu.memAlloc(bytes);
            gpu.memcpyHtoDAsync(device, pinned, bytes, StreamHandle.DEFAULT);

            gpu.migrate(Emulation.gpu(1));
            assertEquals(
                    0,
                    emulation.usedBytes(0),
                    "the source's device memory is freed although it is kept for the buffer");

            pinned.fill((byte) 0);
            gpu.memcpyDtoHAsync(pinned, device, bytes, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            for (long i = 0; i < bytes / 8; i += 1023) {
                assertEquals(i * 31, pinned.getAtIndex(ValueLayout.JAVA_LONG, i));
            }
            MemorySegment second = gpu.memAllocHost(4096);
            gpu.memFreeHost(pinned);
            gpu.memFreeHost(second);
            assertError(ErrorCode.CUDA_ERROR_INVALID_VALUE, () -> gpu.memFreeHost(pinned));
        }
    }

    @Test
    void anAsynchronousErrorFoundWhileDrainingStopsTheMigrationAndReachesTheApp() {
        KernelTwinRegistry twins = TestKernels.twins()
                .register(TestKernels.EMPTY_KERNEL, (grid, block, args, memory) -> {
                    throw new VgpuException(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, "injected kernel fault");
                });
        try (Emulation emulation = new Emulation(2, twins);
                MigratableGpu gpu = emulation.open(0, 0)) {
            FunctionHandle faulty =
                    gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
            gpu.launchKernel(faulty, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, KernelArgs.none());

            MigrationException failure = assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
            assertEquals(MigrationStep.DRAIN, failure.failedStep());
            assertEquals(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, failure.code());
            VgpuException raised = assertError(ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, gpu::ctxSynchronize);
            assertTrue(raised.getMessage().contains("injected kernel fault"), raised.getMessage());
            gpu.ctxSynchronize();
            assertTrue(gpu.migrate(Emulation.gpu(1)).migrated());
        }
    }

    @Test
    void callsInFlightFinishBeforeTheSwitchAndTheLockGivesUpAfterItsTimeout() throws Exception {
        CountDownLatch inKernel = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        KernelTwinRegistry twins = TestKernels.twins()
                .register(TestKernels.EMPTY_KERNEL, (grid, block, args, memory) -> {
                    inKernel.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
        MigrationConfig shortLock = Emulation.VERIFIED.withLockTimeout(Duration.ofMillis(100));
        try (Emulation emulation = new Emulation(2, twins);
                MigratableGpu gpu = emulation.open(0, 0, shortLock, MigrationListener.NONE, MigrationFaults.NONE)) {
            FunctionHandle blocking =
                    gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
            CompletableFuture<Void> launch = CompletableFuture.runAsync(
                    () -> gpu.launchKernel(
                            blocking, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, KernelArgs.none()),
                    threads);
            assertTrue(inKernel.await(10, TimeUnit.SECONDS));

            MigrationException timedOut = assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
            assertEquals(MigrationStep.LOCK, timedOut.failedStep());
            assertEquals(ErrorCode.CUDA_ERROR_NOT_PERMITTED, timedOut.code());
            gpu.memGetInfo(); // the lock was given up: other calls run

            release.countDown();
            launch.get(10, TimeUnit.SECONDS);
            assertTrue(gpu.migrate(Emulation.gpu(1)).migrated());
        }
    }

    @Test
    void aMigrationWaitsForTheCallInFlight() throws Exception {
        CountDownLatch inKernel = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        KernelTwinRegistry twins = TestKernels.twins()
                .register(TestKernels.EMPTY_KERNEL, (grid, block, args, memory) -> {
                    inKernel.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
        CountDownLatch migrationStarted = new CountDownLatch(1);
        MigrationFaults signalStart = (point, index, target) -> {
            if (point == FaultPoint.OPEN_TARGET) {
                migrationStarted.countDown();
            }
        };
        try (Emulation emulation = new Emulation(2, twins);
                MigratableGpu gpu = emulation.open(0, 0, Emulation.VERIFIED, MigrationListener.NONE, signalStart)) {
            FunctionHandle blocking =
                    gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
            CompletableFuture<Void> launch = CompletableFuture.runAsync(
                    () -> gpu.launchKernel(
                            blocking, Dim3.of(1), Dim3.of(1), 0, StreamHandle.DEFAULT, KernelArgs.none()),
                    threads);
            assertTrue(inKernel.await(10, TimeUnit.SECONDS));
            CompletableFuture<MigrationReport> migration =
                    CompletableFuture.supplyAsync(() -> gpu.migrate(Emulation.gpu(1)), threads);
            assertTrue(migrationStarted.await(10, TimeUnit.SECONDS));
            // However long the migration has had, it cannot finish while the launch is inside the gate.
            Thread.sleep(50);
            assertTrue(!migration.isDone(), "the migration waits while the launch is in flight");
            release.countDown();
            MigrationReport report = migration.get(10, TimeUnit.SECONDS);
            launch.get(10, TimeUnit.SECONDS);
            assertTrue(report.migrated() && report.lockWait().toNanos() > 0, report.summary());
        }
    }

    @Test
    void oneMigrationOfAVgpuAtATime() throws Exception {
        CountDownLatch reachedOpen = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        MigrationFaults holdAtOpen = (point, index, target) -> {
            if (point == FaultPoint.OPEN_TARGET) {
                reachedOpen.countDown();
                try {
                    proceed.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0, Emulation.VERIFIED, MigrationListener.NONE, holdAtOpen)) {
            CompletableFuture<MigrationReport> first =
                    CompletableFuture.supplyAsync(() -> gpu.migrate(Emulation.gpu(1)), threads);
            assertTrue(reachedOpen.await(10, TimeUnit.SECONDS));
            assertError(ErrorCode.CUDA_ERROR_NOT_PERMITTED, () -> gpu.migrate(Emulation.gpu(1)));
            proceed.countDown();
            assertTrue(first.get(10, TimeUnit.SECONDS).migrated());
        }
    }

    @Test
    void nativeToNativeInOneProcessIsRefusedAndNothingChanges() {
        try (Emulation emulation = new Emulation(2)) {
            GpuBackend pretendNative = new StubNativeBackend(emulation.backend);
            VirtualGpu nativeSource = new ForwardingVirtualGpu(emulation.backend.open(0, VaWindow.forVgpu(0))) {
                @Override
                public String backendName() {
                    return "native";
                }
            };
            try (MigratableGpu gpu = new MigratableGpu(
                    nativeSource,
                    Emulation.gpu(0),
                    new NodeTargetResolver(pretendNative),
                    Emulation.VERIFIED,
                    MigrationListener.NONE,
                    MigrationFaults.NONE)) {
                long data = gpu.memAlloc(4096);
                gpu.memsetD8(data, (byte) 9, 4096);
                MigrationException refused =
                        assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
                assertEquals(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, refused.code());
                assertEquals(MigrationStep.OPEN_TARGET, refused.failedStep());
                assertTrue(refused.getMessage().contains("native-to-native"), refused.getMessage());
                assertEquals("gpu 0 (native)", gpu.location());
                byte[] back = new byte[1];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), data + 4095, 1);
                assertEquals(9, back[0]);
            }
        }
    }

    @Test
    void remoteTargetsNeedARemoteRuntime() {
        try (Emulation emulation = new Emulation(1);
                MigratableGpu gpu = emulation.open(0, 0)) {
            MigrationException refused =
                    assertThrows(MigrationException.class, () -> gpu.migrate(MigrationTarget.parse("lender-1:7400")));
            assertEquals(ErrorCode.CUDA_ERROR_NOT_SUPPORTED, refused.code());
        }
    }

    @Test
    void aTargetForAnotherWindowOrDeviceKindIsRefused() {
        try (Emulation emulation = new Emulation(2)) {
            TargetResolver wrongWindow = (target, window, source) -> emulation.backend.open(1, VaWindow.forVgpu(5));
            try (MigratableGpu gpu = new MigratableGpu(
                    emulation.backend.open(0, VaWindow.forVgpu(0)),
                    Emulation.gpu(0),
                    wrongWindow,
                    Emulation.VERIFIED,
                    MigrationListener.NONE,
                    MigrationFaults.NONE)) {
                MigrationException refused =
                        assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
                assertEquals(ErrorCode.CUDA_ERROR_INVALID_DEVICE, refused.code());
            }
            TargetResolver smallerBlocks =
                    (target, window, source) -> new ForwardingVirtualGpu(emulation.backend.open(1, window)) {
                        @Override
                        public DeviceProperties deviceProperties() {
                            DeviceProperties real = delegate.deviceProperties();
                            return new DeviceProperties(
                                    real.name(),
                                    real.totalMemory(),
                                    real.computeCapabilityMajor(),
                                    real.computeCapabilityMinor(),
                                    real.multiprocessorCount(),
                                    256,
                                    real.warpSize(),
                                    real.emulated());
                        }
                    };
            try (MigratableGpu gpu = new MigratableGpu(
                    emulation.backend.open(0, VaWindow.forVgpu(0)),
                    Emulation.gpu(0),
                    smallerBlocks,
                    Emulation.VERIFIED,
                    MigrationListener.NONE,
                    MigrationFaults.NONE)) {
                MigrationException refused =
                        assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(1)));
                assertEquals(ErrorCode.CUDA_ERROR_INVALID_DEVICE, refused.code());
                assertTrue(refused.getMessage().contains("threads per block"), refused.getMessage());
            }
            assertEquals(0, emulation.usedBytes(1));
        }
    }

    @Test
    void theListenerGetsEveryReportAndAClosedVgpuRefusesEverything() {
        List<MigrationReport> reports = new ArrayList<>();
        try (Emulation emulation = new Emulation(2)) {
            MigratableGpu gpu = emulation.open(0, 0, Emulation.VERIFIED, reports::add, MigrationFaults.NONE);
            long a = gpu.memAlloc(3 << 20);
            gpu.memAlloc(4096);
            MigrationReport report = gpu.migrate(Emulation.gpu(1));
            assertEquals(List.of(report), reports);
            assertEquals((3 << 20) + 4096, report.memSyncBytes());
            assertEquals(2, report.memSyncRegions());
            assertEquals("gpu 0 (emulated)", report.from());
            assertEquals("gpu 1", report.to());
            assertTrue(report.blocked().compareTo(report.memSync()) >= 0, report.summary());
            assertTrue(report.summary().startsWith("vgpu 0 moved gpu 0 (emulated) -> gpu 1: open "), report.summary());
            gpu.close();
            gpu.close();
            assertEquals(0, emulation.usedBytes(1));
            assertError(ErrorCode.VGPU_CLOSED, () -> gpu.memFree(a));
            MigrationException closed = assertThrows(MigrationException.class, () -> gpu.migrate(Emulation.gpu(0)));
            assertEquals(ErrorCode.VGPU_CLOSED, closed.code());
            assertEquals(2, reports.size());
        }
    }

    /** With one buffer nothing overlaps; with more, reads run ahead of writes by every buffer (the target is local). */
    @ParameterizedTest(name = "{0} staging buffers")
    @ValueSource(ints = {1, 2, 3, 5})
    void bytesInFirstAndLastPiecesOfLargeRegionsArrive(int stagingBuffers) {
        MigrationConfig smallChunks =
                Emulation.VERIFIED.withChunkBytes(64 << 10).withStagingBuffers(stagingBuffers);
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0, smallChunks, MigrationListener.NONE, MigrationFaults.NONE)) {
            // Regions smaller than, equal to and larger than a chunk, odd sizes, packed and split.
            long[] sizes = {1, 4095, 64 << 10, (64 << 10) + 1, 1_000_003, 17};
            long[] addresses = new long[sizes.length];
            for (int r = 0; r < sizes.length; r++) {
                addresses[r] = gpu.memAlloc(sizes[r]);
                byte[] pattern = new byte[(int) sizes[r]];
                for (int i = 0; i < pattern.length; i++) {
                    pattern[i] = (byte) (i * 7 + r);
                }
                gpu.memcpyHtoD(addresses[r], MemorySegment.ofArray(pattern), sizes[r]);
            }
            gpu.migrate(Emulation.gpu(1));
            for (int r = 0; r < sizes.length; r++) {
                byte[] expected = new byte[(int) sizes[r]];
                for (int i = 0; i < expected.length; i++) {
                    expected[i] = (byte) (i * 7 + r);
                }
                byte[] back = new byte[(int) sizes[r]];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), addresses[r], sizes[r]);
                assertArrayEquals(expected, back, "region " + r);
            }
        }
    }

    /**
     * Events recorded on either side of moves are timed on one clock: a time measured before a move reads the same
     * after it, times across moves add up and run forward, and events recorded after a move time each other as before.
     */
    @Test
    void eventsRecordedBeforeAndAfterMovesAreTimedOnOneClock() throws Exception {
        try (Emulation emulation = new Emulation(2);
                MigratableGpu gpu = emulation.open(0, 0)) {
            long buffer = gpu.memAlloc(1 << 20);
            EventHandle a = gpu.eventCreate();
            EventHandle b = gpu.eventCreate();
            EventHandle c = gpu.eventCreate();
            EventHandle d = gpu.eventCreate();
            gpu.eventRecord(a, StreamHandle.DEFAULT);
            gpu.memsetD8(buffer, (byte) 1, 1 << 20);
            gpu.eventRecord(b, StreamHandle.DEFAULT);
            float beforeTheMove = gpu.eventElapsedTime(a, b);

            assertTrue(gpu.migrate(Emulation.gpu(1)).migrated());
            gpu.memsetD8(buffer, (byte) 2, 1 << 20);
            gpu.eventRecord(c, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertEquals(beforeTheMove, gpu.eventElapsedTime(a, b), 1e-3, "fixed as the vGPU left its source");
            assertTrue(gpu.eventElapsedTime(b, c) >= 0, "the clock runs forward across the move");
            assertEquals(gpu.eventElapsedTime(a, b) + gpu.eventElapsedTime(b, c), gpu.eventElapsedTime(a, c), 1e-3);
            assertEquals(-gpu.eventElapsedTime(a, c), gpu.eventElapsedTime(c, a), 1e-3);

            assertTrue(gpu.migrate(Emulation.gpu(0)).migrated());
            gpu.eventRecord(d, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertEquals(beforeTheMove, gpu.eventElapsedTime(a, b), 1e-3, "and after a second move");
            assertTrue(gpu.eventElapsedTime(c, d) >= 0);
            assertEquals(gpu.eventElapsedTime(a, c) + gpu.eventElapsedTime(c, d), gpu.eventElapsedTime(a, d), 1e-3);
            gpu.eventRecord(a, StreamHandle.DEFAULT);
            gpu.ctxSynchronize();
            assertTrue(gpu.eventElapsedTime(d, a) >= 0, "recorded again, an event is timed where it is now");
            assertError(
                    ErrorCode.CUDA_ERROR_INVALID_HANDLE,
                    () -> gpu.eventElapsedTime(a, gpu.eventCreate()),
                    "never recorded");
        }
    }

    /**
     * A source that cannot time the app's events does not stop the move: those events' times across it are refused
     * saying why, and events recorded after the move time each other.
     */
    @Test
    void aMoveWhoseSourceCannotTimeTheEventsGoesOnAndRefusesOnlyTheirTimesAcrossIt() throws Exception {
        try (Emulation emulation = new Emulation(2)) {
            boolean[] broken = {false};
            VirtualGpu source = new ForwardingVirtualGpu(emulation.backend.open(0, VaWindow.forVgpu(0))) {
                @Override
                public float eventElapsedTime(EventHandle start, EventHandle end) {
                    if (broken[0]) {
                        throw new VgpuException(ErrorCode.CUDA_ERROR_LAUNCH_FAILED, "the source's timer broke");
                    }
                    return super.eventElapsedTime(start, end);
                }
            };
            try (MigratableGpu gpu = emulation.wrap(source)) {
                EventHandle before = gpu.eventCreate();
                EventHandle after = gpu.eventCreate();
                EventHandle later = gpu.eventCreate();
                gpu.eventRecord(before, StreamHandle.DEFAULT);
                broken[0] = true;
                assertTrue(gpu.migrate(Emulation.gpu(1)).migrated(), "the move goes on");
                gpu.eventRecord(after, StreamHandle.DEFAULT);
                gpu.eventRecord(later, StreamHandle.DEFAULT);
                gpu.ctxSynchronize();
                VgpuException refused =
                        assertError(ErrorCode.CUDA_ERROR_INVALID_HANDLE, () -> gpu.eventElapsedTime(before, after));
                assertTrue(refused.getMessage().contains("could not read its time"), refused.getMessage());
                assertTrue(gpu.eventElapsedTime(after, later) >= 0);
            }
        }
    }

    static VgpuException assertError(ErrorCode code, Executable call) {
        return assertError(code, call, "");
    }

    static VgpuException assertError(ErrorCode code, Executable call, String why) {
        VgpuException e = assertThrows(VgpuException.class, call, why);
        assertEquals(code, e.code(), e.getMessage());
        return e;
    }

    /** A backend that says it drives real GPUs, to exercise the native-to-native refusal without one. */
    private static final class StubNativeBackend extends ForwardingGpuBackend {
        StubNativeBackend(GpuBackend devices) {
            super(devices);
        }

        @Override
        public String name() {
            return "native";
        }

        @Override
        public boolean isEmulation() {
            return false;
        }
    }
}
