package org.vgpu.runtime.remote.transport;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.remote.RemoteTuning;

/**
 * Copies a large chunk with several threads at once: the copy a bulk byte takes in user space on its way, from the
 * buffers the network filled (into the worker's page-locked staging slot before the device reads it, into the
 * caller's memory after the device wrote it), or between host memory and a slot of memory shared by a same-host
 * client and worker. One thread's copy is bounded by one core's memory bandwidth (5.7-11 GB/s on the H200 machines),
 * below what several TCP streams or a shared slot carry; the streams themselves are read by one event loop each, so
 * the copy was the one step of a striped copy that a single thread did for every byte.
 *
 * <p>The calling thread copies the first piece itself and returns once every piece has landed, so the copy is one
 * step in its caller's order, as a plain copy is: nothing a caller relies on about the order of chunks changes. A
 * chunk is cut into at most as many pieces as there are threads, none below {@link #MIN_PIECE_BYTES}; smaller
 * chunks, and memory other threads may not touch (a confined arena), are copied by the caller alone.
 */
public final class ParallelCopy implements AutoCloseable {
    /** No piece is smaller: handing one to another thread costs a few microseconds, about what 256 KiB take. */
    public static final int MIN_PIECE_BYTES = 256 << 10;

    /** A thread that never runs: memory it may access is memory any thread may (not confined to an owner). */
    private static final Thread NO_OWNER = Thread.ofPlatform().unstarted(() -> {});

    private static volatile ParallelCopy shared;

    private final int threads;
    /** Runs the pieces after the first; none when {@link #threads} is 1. */
    private final ExecutorService helpers;

    /**
     * Copies with {@code threads} threads: the caller and {@code threads - 1} helpers named {@code name}, which end
     * when idle and start again on demand.
     */
    public ParallelCopy(int threads, String name) {
        if (threads < 1) {
            throw new IllegalArgumentException("a copy takes at least 1 thread, got " + threads);
        }
        this.threads = threads;
        if (threads == 1) {
            helpers = null;
        } else {
            helpers = IdleEndingThreads.pool(threads - 1, name);
        }
    }

    /** This process's copier, with the threads {@link RemoteTuning#copyThreads} gives. */
    public static ParallelCopy shared() {
        ParallelCopy copy = shared;
        if (copy == null) {
            synchronized (ParallelCopy.class) {
                copy = shared;
                if (copy == null) {
                    copy = new ParallelCopy(RemoteTuning.current().copyThreads(), "vgpu-bulk-copy");
                    shared = copy;
                }
            }
        }
        return copy;
    }

    /** How many threads copy a large chunk, the caller's among them. */
    public int threads() {
        return threads;
    }

    /** Whether any thread may access {@code segment}'s memory, rather than only the owner of its confined arena. */
    public static boolean isShared(MemorySegment segment) {
        return segment.isAccessibleBy(NO_OWNER);
    }

    /**
     * Copies the {@code length} bytes of {@code data} from {@code index} (any number of buffers: a large chunk
     * arrives in several) into {@code destination} at {@code offset}; returns once all of them are there. Neither
     * index changes.
     *
     * @throws IllegalStateException   the destination's memory was freed (its arena closed)
     * @throws IndexOutOfBoundsException the bytes do not fit {@code destination} from {@code offset}
     */
    public void copy(ByteBuf data, int index, int length, MemorySegment destination, long offset) {
        ByteBuffer[] buffers = data.nioBuffers(index, length);
        copyInPieces(length, isShared(destination), (from, to) -> copyRange(buffers, from, to, destination, offset));
    }

    /**
     * Copies {@code length} bytes of {@code source} from {@code sourceOffset} to {@code destination} at {@code offset};
     * returns once all of them are there.
     *
     * @throws IllegalStateException   either memory was freed (its arena closed)
     * @throws IndexOutOfBoundsException the bytes do not fit either segment
     */
    public void copy(MemorySegment source, long sourceOffset, MemorySegment destination, long offset, long length) {
        copyInPieces(
                length,
                isShared(source) && isShared(destination),
                (from, to) -> MemorySegment.copy(source, sourceOffset + from, destination, offset + from, to - from));
    }

    /** Copies bytes {@code [from, to)} of a copy. */
    @FunctionalInterface
    private interface Piece {
        void copy(long from, long to);
    }

    /**
     * Copies {@code [0, length)} through {@code piece}: in whole pages per thread where {@code anyThread} may touch
     * the memory and the copy is large enough, the last piece taking the rest, else by the caller alone.
     */
    private void copyInPieces(long length, boolean anyThread, Piece piece) {
        int pieces = helpers == null || !anyThread ? 1 : (int) Math.max(1, Math.min(threads, length / MIN_PIECE_BYTES));
        if (pieces == 1) {
            piece.copy(0, length);
            return;
        }
        long pieceBytes = Math.ceilDiv(Math.ceilDiv(length, pieces), 4096) * 4096L;
        CompletableFuture<?>[] others = new CompletableFuture<?>[pieces - 1];
        int handed = 0;
        try {
            for (long from = pieceBytes; from < length; from += pieceBytes) {
                long start = from;
                long end = Math.min(length, from + pieceBytes);
                others[handed] = CompletableFuture.runAsync(() -> piece.copy(start, end), helpers);
                handed++;
            }
            piece.copy(0, Math.min(length, pieceBytes));
        } finally {
            // every piece handed off lands (or fails) before the copy returns, even when the caller's own failed
            awaitAll(others, handed);
        }
    }

    private static void awaitAll(CompletableFuture<?>[] others, int handed) {
        Throwable first = null;
        for (int i = 0; i < handed; i++) {
            try {
                others[i].join();
            } catch (CompletionException e) {
                if (first == null) {
                    first = e.getCause() != null ? e.getCause() : e;
                }
            }
        }
        // what a piece threw, as the caller's own copy would have thrown it: a fault in shared memory another
        // process shrank is an InternalError, which whoever reads the ring expects as such
        if (first instanceof RuntimeException failure) {
            throw failure;
        }
        if (first instanceof Error error) {
            throw error;
        }
        if (first != null) {
            throw new IllegalStateException(first);
        }
    }

    /** Copies bytes {@code [from, to)} of the buffers, taken back to back, to {@code destination} at {@code offset + from}. */
    private static void copyRange(ByteBuffer[] buffers, long from, long to, MemorySegment destination, long offset) {
        long bufferStart = 0;
        for (ByteBuffer buffer : buffers) {
            long bufferEnd = bufferStart + buffer.remaining();
            long start = Math.max(from, bufferStart);
            long end = Math.min(to, bufferEnd);
            if (start < end) {
                MemorySegment.copy(
                        MemorySegment.ofBuffer(buffer), start - bufferStart, destination, offset + start, end - start);
            }
            if (bufferEnd >= to) {
                return;
            }
            bufferStart = bufferEnd;
        }
    }

    /** Lets the helper threads end once they are done with what they were handed. */
    @Override
    public void close() {
        if (helpers != null) {
            helpers.shutdown();
        }
    }
}
