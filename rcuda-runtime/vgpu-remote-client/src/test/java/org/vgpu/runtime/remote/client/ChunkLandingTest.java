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
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Random;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Chunks handed to the copiers land side by side where they write different memory and in the order
 * they were handed over where they write the same, and a thread that waits for them returns only
 * once those before its mark have; the copiers are a queue this test runs by hand, in the order it
 * chooses, and, once, a pool of real threads.
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
    void aChunkAlreadyInItsPlaceIsNeitherCopiedNorHandedOffAndWritesNothingMore() {
        try (Arena arena = Arena.ofShared()) {
            MemorySegment destination = arena.allocate(4 * MIN);
            PendingCopyToHost copy = new PendingCopyToHost(destination, destination.byteSize());
            // what a stripe read straight in: a buffer over the destination's own bytes at the chunk's offset
            destination.asSlice(MIN, MIN).fill((byte) 5);
            ByteBuf inPlace =
                    Unpooled.wrappedBuffer(destination.asSlice(MIN, MIN).asByteBuffer());
            landing.land(copy, destination, MIN, inPlace);
            assertEquals(0, copier.queued());
            assertEquals(0, landing.handedOff());
            assertFalse(landing.writesInto(destination));
            // the same bytes named at another offset are copied there
            landing.land(copy, destination, 2 * MIN, inPlace);
            assertEquals(1, copier.queued());
            assertTrue(landing.writesInto(destination), "a chunk is landing");
            assertTrue(landing.writesInto(destination.asSlice(3 * MIN - 1, 1)), "into its last byte");
            assertFalse(landing.writesInto(destination.asSlice(0, 2 * MIN)), "not before it");
            assertFalse(landing.writesInto(destination.asSlice(3 * MIN)), "nor after it");
            copier.runAll();
            assertEquals(5, destination.get(ValueLayout.JAVA_BYTE, 3 * MIN - 1));
            assertFalse(landing.writesInto(destination));
            inPlace.release();
        }
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
        assertEquals(1, copier.queued(), "the small chunk into the same memory waits, not started");
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

    @Test
    void chunksOfOneCopyLandSideBySideAndAMarkWaitsForEveryChunkBeforeIt() throws Exception {
        byte[] destination = new byte[3 * MIN];
        MemorySegment host = MemorySegment.ofArray(destination);
        PendingCopyToHost copy = new PendingCopyToHost(host, destination.length);
        for (int chunk = 0; chunk < 3; chunk++) {
            landing.land(copy, host, (long) chunk * MIN, filled(MIN, chunk + 1));
        }
        assertEquals(3, copier.queued(), "chunks of one copy never overlap: all three started");
        CompletableFuture<Void> first = CompletableFuture.runAsync(() -> landing.awaitLanded(1));
        copier.runNewest();
        copier.runNewest();
        assertEquals(3, destination[3 * MIN - 1]);
        assertEquals(2, destination[MIN]);
        assertEquals(0, destination[0], "the first chunk has not landed");
        Thread.sleep(100);
        assertFalse(first.isDone(), "the chunks after the first landed, the first not: the mark of 1 is not reached");
        copier.runAll();
        first.get(10, TimeUnit.SECONDS);
        landing.awaitLanded(3);
        assertEquals(1, destination[MIN - 1]);
    }

    @Test
    void aChunkIntoMemoryAnEarlierChunkStillWritesWaitsAndHoldsBackThoseAfterIt() {
        byte[] shared = new byte[2 * MIN];
        byte[] other = new byte[MIN];
        MemorySegment host = MemorySegment.ofArray(shared);
        PendingCopyToHost earlier = new PendingCopyToHost(host, shared.length);
        landing.land(earlier, host, 0, filled(MIN, 1));
        landing.land(earlier, host, MIN, filled(MIN, 1));
        // a later copy into the second half, then one into other memory altogether
        MemorySegment secondHalf = host.asSlice(MIN);
        landing.land(new PendingCopyToHost(secondHalf, MIN), secondHalf, 0, filled(MIN, 2));
        landing.land(
                new PendingCopyToHost(MemorySegment.ofArray(other), MIN),
                MemorySegment.ofArray(other),
                0,
                filled(MIN, 3));
        assertEquals(2, copier.queued(), "the overlapping chunk waits, and the one after it waits behind it");

        copier.runNewest(); // the earlier copy's second half: what the later copy waited for
        assertEquals(3, copier.queued(), "the earlier copy's first half, then both later chunks, started");
        copier.runAllNewestFirst();
        landing.awaitLanded(landing.handedOff());
        assertEquals(1, shared[MIN - 1]);
        assertEquals(2, shared[MIN], "the later copy's bytes are what remains");
        assertEquals(2, shared[2 * MIN - 1]);
        assertEquals(3, other[MIN - 1]);
    }

    @Test
    void forwardedChunksReachTheirSinkOneAtATimeInTheOrderHandedOff() {
        List<Long> taken = new ArrayList<>();
        PendingCopyToHost.ChunkSink sink = (offset, chunk) -> {
            taken.add(offset);
            chunk.release();
        };
        PendingCopyToHost copy = PendingCopyToHost.forwarding(sink, 3L * MIN);
        for (int chunk = 0; chunk < 3; chunk++) {
            ByteBuf data = filled(MIN, chunk);
            landing.forward(copy, sink, (long) chunk * MIN, data);
            data.release();
            assertEquals(1, copier.queued(), "a forwarded chunk waits for the one before it");
        }
        byte[] destination = new byte[MIN];
        MemorySegment host = MemorySegment.ofArray(destination);
        landing.land(new PendingCopyToHost(host, MIN), host, 0, filled(MIN, 5));
        assertEquals(1, copier.queued(), "nothing starts beside a forwarded chunk");
        copier.runAllNewestFirst();
        assertEquals(List.of(0L, (long) MIN, 2L * MIN), taken);
        assertEquals(5, destination[0]);
    }

    @Test
    void closingLandsWhatStillWaitedOnTheThreadThatFinishedBeforeIt() {
        byte[] destination = new byte[MIN];
        MemorySegment host = MemorySegment.ofArray(destination);
        landing.land(new PendingCopyToHost(host, MIN), host, 0, filled(MIN, 1));
        landing.land(new PendingCopyToHost(host, MIN), host, 0, filled(MIN, 2));
        landing.close();
        copier.runAll();
        landing.awaitLanded(landing.handedOff());
        assertEquals(2, destination[MIN - 1], "the waiting chunk landed after the first, though the copiers were shut");
    }

    @Test
    void manyCopiesOnRealCopierThreadsEndAsIfTheyHadLandedOneAfterAnother() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(4);
        try (Arena arena = Arena.ofShared()) {
            ChunkLanding parallel = new ChunkLanding(MIN, threads);
            MemorySegment[] memories = {
                MemorySegment.ofArray(new byte[32 * MIN]),
                arena.allocate(32 * MIN),
                MemorySegment.ofArray(new byte[8 * MIN])
            };
            byte[][] expected = new byte[memories.length][];
            for (int i = 0; i < memories.length; i++) {
                expected[i] = new byte[(int) memories[i].byteSize()];
            }
            Random random = new Random(42);
            for (int copyNumber = 1; copyNumber <= 300; copyNumber++) {
                int which = random.nextInt(memories.length);
                int span = (int) memories[which].byteSize() / MIN;
                int from = random.nextInt(span);
                int chunks = 1 + random.nextInt(Math.min(6, span - from));
                MemorySegment destination = memories[which].asSlice((long) from * MIN, (long) chunks * MIN);
                PendingCopyToHost copy = new PendingCopyToHost(destination, destination.byteSize());
                for (int chunk = 0; chunk < chunks; chunk++) {
                    int value = (copyNumber * 7 + chunk) & 0x7f;
                    ByteBuf data = filled(MIN, value);
                    parallel.land(copy, destination, (long) chunk * MIN, data);
                    data.release();
                    Arrays.fill(expected[which], (from + chunk) * MIN, (from + chunk + 1) * MIN, (byte) value);
                }
            }
            parallel.awaitLanded(parallel.handedOff());
            for (int i = 0; i < memories.length; i++) {
                assertArrayEquals(expected[i], memories[i].toArray(ValueLayout.JAVA_BYTE), "memory " + i);
            }
            parallel.close();
        } finally {
            threads.shutdown();
        }
    }

    /** An executor whose tasks wait until the test runs them, oldest or newest first, on its own thread. */
    private static final class ManualCopier extends AbstractExecutorService {
        private final Deque<Runnable> tasks = new ArrayDeque<>();
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

        void runNewest() {
            pollNewest().run();
        }

        void runAllNewestFirst() {
            for (Runnable task = pollNewest(); task != null; task = pollNewest()) {
                task.run();
            }
        }

        private synchronized Runnable poll() {
            return tasks.poll();
        }

        private synchronized Runnable pollNewest() {
            return tasks.pollLast();
        }

        @Override
        public synchronized void execute(Runnable task) {
            if (shutdown) {
                throw new RejectedExecutionException("shut down");
            }
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
