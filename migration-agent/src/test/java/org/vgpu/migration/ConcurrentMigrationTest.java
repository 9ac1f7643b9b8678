package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.EventHandle;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.ModuleHandle;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.kernels.TestKernels;

/** Migrations while app threads issue calls, and several vGPUs of one process moving independently. */
@Timeout(120)
class ConcurrentMigrationTest {

    /**
     * Four app threads, each with its own stream and buffers, run saxpy rounds and check every round
     * exactly against the CPU while the vGPU moves between three devices under them.
     */
    @Test
    void appThreadsKeepComputingCorrectlyWhileTheVgpuMigrates() throws Exception {
        int threads = 4;
        int n = 4096;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicBoolean stop = new AtomicBoolean();
        try (Emulation emulation = new Emulation(3);
                MigratableGpu gpu = emulation.open(0, 0)) {
            FunctionHandle saxpy = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.SAXPY);
            List<Future<Integer>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                float factor = t + 1;
                workers.add(pool.submit(() -> {
                    StreamHandle stream = gpu.streamCreate();
                    float[] x = new float[n];
                    for (int i = 0; i < n; i++) {
                        x[i] = i * 0.25f - 100;
                    }
                    long dx = gpu.memAlloc(n * 4L);
                    long dy = gpu.memAlloc(n * 4L);
                    gpu.memcpyHtoD(dx, MemorySegment.ofArray(x), n * 4L);
                    gpu.memsetD32(dy, Float.floatToRawIntBits(0f), n);
                    float[] expected = new float[n];
                    float[] y = new float[n];
                    int rounds = 0;
                    while (!stop.get() || rounds < 20) {
                        gpu.launchKernel(
                                saxpy,
                                Dim3.of(n / 256),
                                Dim3.of(256),
                                0,
                                stream,
                                KernelArgs.builder()
                                        .i32(n)
                                        .f32(factor)
                                        .pointer(dx)
                                        .pointer(dy)
                                        .build());
                        for (int i = 0; i < n; i++) {
                            expected[i] = factor * x[i] + expected[i];
                        }
                        gpu.streamSynchronize(stream);
                        gpu.memcpyDtoH(MemorySegment.ofArray(y), dy, n * 4L);
                        for (int i = 0; i < n; i++) {
                            if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(y[i])) {
                                throw new AssertionError("thread " + factor + " round " + rounds + " element " + i
                                        + ": expected " + expected[i] + ", got " + y[i]);
                            }
                        }
                        rounds++;
                    }
                    gpu.memFree(dx);
                    gpu.memFree(dy);
                    gpu.streamDestroy(stream);
                    return rounds;
                }));
            }
            int migrations = migrateUnder(gpu, workers, stop);
            assertEquals(migrations, gpu.migrationCount());
            assertEquals(0, gpu.liveBytes());
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /**
     * App threads that keep allocating and freeing, creating and destroying streams and events and
     * loading and unloading modules while the vGPU migrates under them, so that the replay ahead of
     * each migration reads a log that changes as it reads it: every round computes exactly, and once
     * the threads have freed all, the device the vGPU ended on holds nothing (a catch-up that missed a
     * free would leave it mapped there).
     */
    @Test
    void appThreadsThatCreateAndDestroyWhileTheVgpuMigratesFindEverythingOnTheTarget() throws Exception {
        int threads = 3;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        AtomicBoolean stop = new AtomicBoolean();
        try (Emulation emulation = new Emulation(3);
                MigratableGpu gpu = emulation.open(0, 0)) {
            List<Future<Integer>> workers = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                workers.add(pool.submit(() -> {
                    int rounds = 0;
                    while (!stop.get() || rounds < 20) {
                        // sizes from 4 KiB (a shared chunk) to 3 MiB (chunks of its own), different each round
                        int n = 1024 << ((rounds + thread) % 10);
                        ModuleHandle module = gpu.moduleLoadData(TestKernels.ptx());
                        FunctionHandle saxpy = gpu.moduleGetFunction(module, TestKernels.SAXPY);
                        StreamHandle stream = gpu.streamCreate();
                        EventHandle done = gpu.eventCreate();
                        long dx = gpu.memAlloc(n * 4L);
                        long dy = gpu.memAlloc(n * 4L);
                        gpu.memsetD32(dx, Float.floatToRawIntBits(thread + 1f), n);
                        gpu.memsetD32(dy, Float.floatToRawIntBits(rounds), n);
                        gpu.launchKernel(
                                saxpy,
                                Dim3.of(Math.ceilDiv(n, 256)),
                                Dim3.of(256),
                                0,
                                stream,
                                KernelArgs.builder()
                                        .i32(n)
                                        .f32(2f)
                                        .pointer(dx)
                                        .pointer(dy)
                                        .build());
                        gpu.eventRecord(done, stream);
                        gpu.eventSynchronize(done);
                        float[] y = new float[n];
                        gpu.memcpyDtoH(MemorySegment.ofArray(y), dy, n * 4L);
                        float expected = 2f * (thread + 1f) + rounds;
                        for (int i = 0; i < n; i++) {
                            if (y[i] != expected) {
                                throw new AssertionError("thread " + thread + " round " + rounds + " element " + i
                                        + ": expected " + expected + ", got " + y[i]);
                            }
                        }
                        gpu.memFree(dx);
                        gpu.memFree(dy);
                        gpu.eventDestroy(done);
                        gpu.streamDestroy(stream);
                        gpu.moduleUnload(module);
                        rounds++;
                    }
                    return rounds;
                }));
            }
            int migrations = migrateUnder(gpu, workers, stop);
            assertEquals(0, gpu.liveBytes());
            assertEquals(0, emulation.usedBytes(migrations % 3), "the device the vGPU ended on holds nothing");
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
    }

    /**
     * Moves {@code gpu} round three devices, 30 times, while {@code workers} run, then stops them, each
     * having done at least 20 rounds.
     *
     * @return the migrations: the vGPU ends on device {@code migrations % 3}
     */
    private static int migrateUnder(MigratableGpu gpu, List<Future<Integer>> workers, AtomicBoolean stop)
            throws Exception {
        int migrations = 30;
        for (int m = 0; m < migrations; m++) {
            MigrationReport report = gpu.migrate(Emulation.gpu((m + 1) % 3));
            assertTrue(report.migrated(), report.summary());
        }
        stop.set(true);
        for (Future<Integer> worker : workers) {
            assertTrue(worker.get(60, TimeUnit.SECONDS) >= 20);
        }
        return migrations;
    }

    /**
     * Three vGPUs of one process, each with its own data, migrate concurrently, each along its own
     * route, and none disturbs the others.
     */
    @Test
    void severalVgpusMigrateIndependentlyInAnyOrder() throws Exception {
        int[][] routes = {{1, 2, 0, 2}, {2, 0, 1}, {0, 1, 0, 2, 1}};
        ExecutorService pool = Executors.newFixedThreadPool(routes.length);
        try (Emulation emulation = new Emulation(3)) {
            List<MigratableGpu> gpus = new ArrayList<>();
            List<Long> buffers = new ArrayList<>();
            int words = 1 << 18;
            for (int k = 0; k < routes.length; k++) {
                MigratableGpu gpu = emulation.open(k, k % 3);
                gpus.add(gpu);
                long buffer = gpu.memAlloc(words * 4L);
                gpu.memsetD32(buffer, 0x1000 + k, words);
                buffers.add(buffer);
            }
            List<Future<?>> moves = new ArrayList<>();
            for (int k = 0; k < routes.length; k++) {
                MigratableGpu gpu = gpus.get(k);
                int[] route = routes[k];
                moves.add(pool.submit(() -> {
                    for (int device : route) {
                        gpu.migrate(Emulation.gpu(device));
                    }
                    return null;
                }));
            }
            for (Future<?> move : moves) {
                move.get(60, TimeUnit.SECONDS);
            }
            for (int k = 0; k < routes.length; k++) {
                MigratableGpu gpu = gpus.get(k);
                assertEquals("gpu " + routes[k][routes[k].length - 1] + " (emulated)", gpu.location());
                assertEquals(routes[k].length, gpu.migrationCount());
                int[] back = new int[words];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), buffers.get(k), words * 4L);
                for (int value : back) {
                    assertEquals(0x1000 + k, value);
                }
                gpu.close();
            }
            for (int device = 0; device < 3; device++) {
                assertEquals(0, emulation.usedBytes(device), "device " + device);
            }
        } finally {
            pool.shutdownNow();
        }
    }
}
