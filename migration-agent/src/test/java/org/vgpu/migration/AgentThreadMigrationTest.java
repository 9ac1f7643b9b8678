package org.vgpu.migration;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ForwardingVirtualGpu;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.workloads.LennardJonesWorkload;

/**
 * A migration started from a thread other than the app's, as the agent starts it: the app keeps
 * calling while the target is opened and while the source is released, and reads back the bits it
 * would have read unmigrated.
 */
@Timeout(120)
class AgentThreadMigrationTest {
    private static final long SEED = 42;
    /** Bounds the app's loop should the migration never finish; the test then fails instead of hanging. */
    private static final int MAX_RUNS = 500;

    private final ExecutorService threads = Executors.newCachedThreadPool();

    @AfterEach
    void stopThreads() {
        threads.shutdownNow();
    }

    @Test
    void theAppKeepsLaunchingWhileAnotherThreadMigratesItAndReadsBackTheSameBits() throws Exception {
        LennardJonesWorkload workload = new LennardJonesWorkload();
        try (Emulation emulation = new Emulation(2)) {
            Transcript reference;
            try (VirtualGpu plain = emulation.backend.open(0, VaWindow.forVgpu(3))) {
                reference = new Transcript(plain);
                workload.run(reference, 1, SEED);
            }
            String unmigrated = reference.digest();
            // The migration opens its target only once the app has finished two whole runs after the
            // trigger: proof that the app went on launching while the migration was under way.
            CountDownLatch runsDuringOpen = new CountDownLatch(2);
            MigrationFaults awaitTheApp = (point, index, target) -> {
                if (point == FaultPoint.OPEN_TARGET) {
                    await(runsDuringOpen);
                }
            };
            try (MigratableGpu gpu = emulation.open(3, 0, Emulation.VERIFIED, MigrationListener.NONE, awaitTheApp)) {
                MigrateAfterLaunches trigger =
                        new MigrateAfterLaunches(gpu, reference.launches() / 4, Emulation.gpu(1), threads);
                int runs = 0;
                // Runs until one whole run has happened after the migration finished.
                boolean migratedBeforeThisRun;
                do {
                    migratedBeforeThisRun = trigger.migration().isDone();
                    Transcript run = new Transcript(trigger);
                    workload.run(run, 1, SEED);
                    assertEquals(unmigrated, run.digest(), "run " + runs + " read back other bits");
                    runsDuringOpen.countDown();
                    runs++;
                } while (!migratedBeforeThisRun && runs < MAX_RUNS);

                assertTrue(migratedBeforeThisRun, "the migration finished");
                assertTrue(runs >= 3, "the app ran during the migration and after it: " + runs + " runs");
                assertEquals(
                        "gpu 1 (emulated)",
                        gpu.location(),
                        trigger.migration().join().summary());
            }
            assertEquals(0, emulation.usedBytes(0), "the source's memory was released");
        }
    }

    @Test
    void theAppIsNotHeldWhileItsSourceIsReleased() throws Exception {
        CountDownLatch releasing = new CountDownLatch(1);
        CountDownLatch appDone = new CountDownLatch(1);
        try (Emulation emulation = new Emulation(2)) {
            // A source slow to let go, as a remote worker saying goodbye: its close waits for the app.
            VirtualGpu slowToClose = new ForwardingVirtualGpu(emulation.backend.open(0, VaWindow.forVgpu(4))) {
                @Override
                public void close() {
                    releasing.countDown();
                    await(appDone);
                    super.close();
                }
            };
            try (MigratableGpu gpu = emulation.wrap(slowToClose)) {
                long data = gpu.memAlloc(1 << 16);
                gpu.memsetD32(data, 0xC0FFEE, (1 << 16) / 4);
                CompletableFuture<MigrationReport> migration =
                        CompletableFuture.supplyAsync(() -> gpu.migrate(Emulation.gpu(1)), threads);
                await(releasing);

                // Every kind of call goes through while the source is still being closed, pinned buffers included.
                MemorySegment pinned = gpu.memAllocHost(1 << 16);
                gpu.memcpyDtoH(pinned, data, 1 << 16);
                gpu.memFreeHost(pinned);
                long more = gpu.memAlloc(4096);
                gpu.memcpyDtoD(more, data, 4096);
                int[] back = new int[1024];
                gpu.memcpyDtoH(MemorySegment.ofArray(back), more, 4096);
                gpu.ctxSynchronize();
                int[] expected = new int[1024];
                Arrays.fill(expected, 0xC0FFEE);
                assertArrayEquals(expected, back);
                assertFalse(migration.isDone(), "the source was still being released");

                appDone.countDown();
                MigrationReport report = migration.join();
                assertEquals("gpu 1 (emulated)", gpu.location(), report.summary());
            }
            assertEquals(0, emulation.usedBytes(0), "the source was closed");
        }
    }

    /** Waits for {@code latch}; a wait that does not end fails the step waiting (and with it the test). */
    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("waited a minute in vain");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting", e);
        }
    }
}
