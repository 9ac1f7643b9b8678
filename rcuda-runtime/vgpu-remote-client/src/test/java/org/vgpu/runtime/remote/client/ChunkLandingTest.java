package org.vgpu.runtime.remote.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Chunks handed to the copier land in the order they were handed over, and a thread that waits for
 * them returns only once they have; the copier is a queue this test runs by hand.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ChunkLandingTest {
    private static final int MIN = 1024;

    private final ManualCopier copier = new ManualCopier();
    private final ChunkLanding landing = new ChunkLanding(MIN, copier);

    private static ByteBuf filled(int bytes, int value) {
        byte[] content = new byte[bytes];
        Arrays.fill(content, (byte) value);
        return Unpooled.wrappedBuffer(content);
    }

    @Test
    void aSmallChunkLandsAtOnceAndALargeOneThroughTheCopier() {
        byte[] destination = new byte[4 * MIN];
        PendingCopyToHost copy = new PendingCopyToHost(MemorySegment.ofArray(destination), destination.length);
        ByteBuf small = filled(MIN - 1, 1);
        landing.land(copy, MemorySegment.ofArray(destination), 0, small);
        assertEquals(1, destination[MIN - 2]);
        assertEquals(0, copier.queued());
        landing.awaitLanded(landing.handedOff());

        ByteBuf large = filled(MIN, 2);
        landing.land(copy, MemorySegment.ofArray(destination), MIN, large);
        large.release();
        assertEquals(1, copier.queued());
        assertEquals(0, destination[MIN], "not landed before the copier ran");
        assertEquals(1, large.refCnt(), "the copier holds its own reference");
        copier.runAll();
        assertEquals(2, destination[2 * MIN - 1]);
        assertEquals(0, large.refCnt(), "released once landed");
    }

    @Test
    void aWaitingThreadReturnsOnlyOnceWhatWasHandedOffHasLanded() throws Exception {
        byte[] destination = new byte[MIN];
        PendingCopyToHost copy = new PendingCopyToHost(MemorySegment.ofArray(destination), destination.length);
        landing.land(copy, MemorySegment.ofArray(destination), 0, filled(MIN, 7));
        CompletableFuture<byte[]> seen = CompletableFuture.supplyAsync(() -> {
            landing.awaitLanded(1);
            return destination.clone();
        });
        Thread.sleep(100);
        assertFalse(seen.isDone(), "waits while the chunk is queued");
        copier.runAll();
        byte[] expected = new byte[MIN];
        Arrays.fill(expected, (byte) 7);
        assertArrayEquals(expected, seen.get(10, TimeUnit.SECONDS));
    }

    @Test
    void aWaitingThreadWaitsForItsMarkNotForChunksHandedOffAfterIt() throws Exception {
        byte[] first = new byte[MIN];
        byte[] second = new byte[MIN];
        landing.land(
                new PendingCopyToHost(MemorySegment.ofArray(first), MIN),
                MemorySegment.ofArray(first),
                0,
                filled(MIN, 1));
        long mark = landing.handedOff();
        landing.land(
                new PendingCopyToHost(MemorySegment.ofArray(second), MIN),
                MemorySegment.ofArray(second),
                0,
                filled(MIN, 2));
        assertEquals(2, landing.handedOff());
        CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> landing.awaitLanded(mark));
        copier.runOne();
        waiting.get(10, TimeUnit.SECONDS);
        assertEquals(1, first[MIN - 1]);
        assertEquals(0, second[0], "the later chunk is still queued");
        copier.runAll();
        assertEquals(2, second[MIN - 1]);
    }

    @Test
    void aSmallChunkAfterAQueuedOneQueuesBehindIt() {
        // two copies into the same memory: the later one's bytes must be what remains
        byte[] destination = new byte[MIN];
        MemorySegment host = MemorySegment.ofArray(destination);
        landing.land(new PendingCopyToHost(host, MIN), host, 0, filled(MIN, 1));
        landing.land(new PendingCopyToHost(host, 16), host, 0, filled(16, 2));
        assertEquals(2, copier.queued(), "the small chunk did not overtake the queued one");
        copier.runAll();
        assertEquals(2, destination[0]);
        assertEquals(2, destination[15]);
        assertEquals(1, destination[16]);
        landing.awaitLanded(landing.handedOff());
        landing.land(new PendingCopyToHost(host, 16), host, 0, filled(16, 3));
        assertEquals(0, copier.queued(), "with nothing queued a small chunk lands at once again");
        assertEquals(3, destination[0]);
    }

    @Test
    void memoryFreedBeforeTheCopierLandsIsTheCopysFailureAndNothingLeaks() {
        Arena arena = Arena.ofShared();
        MemorySegment host = arena.allocate(MIN);
        PendingCopyToHost copy = new PendingCopyToHost(host, MIN);
        ByteBuf chunk = filled(MIN, 1);
        landing.land(copy, host, 0, chunk);
        chunk.release();
        arena.close();
        copier.runAll();
        landing.awaitLanded(landing.handedOff());
        assertEquals(0, chunk.refCnt());
        VgpuException e = assertThrows(VgpuException.class, copy::throwIfDestinationFreed);
        assertEquals(ErrorCode.CUDA_ERROR_INVALID_VALUE, e.code());
        assertTrue(e.getMessage().contains("freed before the copy completed"), e.getMessage());
    }

    @Test
    void withNoThresholdEveryChunkLandsOnTheEventLoop() {
        ChunkLanding inline = new ChunkLanding(0, copier);
        byte[] destination = new byte[4 * MIN];
        MemorySegment host = MemorySegment.ofArray(destination);
        inline.land(new PendingCopyToHost(host, destination.length), host, 0, filled(4 * MIN, 9));
        assertEquals(0, copier.queued());
        assertEquals(9, MemorySegment.ofArray(destination).get(ValueLayout.JAVA_BYTE, 4 * MIN - 1));
    }

    /** An executor whose tasks wait until the test runs them, in order, on its own thread. */
    private static final class ManualCopier extends AbstractExecutorService {
        private final Queue<Runnable> tasks = new ArrayDeque<>();
        private boolean shutdown;

        synchronized int queued() {
            return tasks.size();
        }

        void runOne() {
            poll().run();
        }

        void runAll() {
            for (Runnable task = poll(); task != null; task = poll()) {
                task.run();
            }
        }

        private synchronized Runnable poll() {
            return tasks.poll();
        }

        @Override
        public synchronized void execute(Runnable task) {
            tasks.add(task);
        }

        @Override
        public synchronized void shutdown() {
            shutdown = true;
        }

        @Override
        public List<Runnable> shutdownNow() {
            shutdown();
            return List.of();
        }

        @Override
        public synchronized boolean isShutdown() {
            return shutdown;
        }

        @Override
        public synchronized boolean isTerminated() {
            return shutdown && tasks.isEmpty();
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return isTerminated();
        }
    }
}
