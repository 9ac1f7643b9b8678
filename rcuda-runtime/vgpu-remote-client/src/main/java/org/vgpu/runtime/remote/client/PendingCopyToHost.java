package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;
import org.vgpu.runtime.remote.transport.ParallelCopy;

/**
 * A device-to-host copy in flight. Where the event loop may touch the caller's memory (heap
 * arrays, shared and global native memory) each DATA chunk is landed there as it arrives, by the
 * event loop or the connection's copier ({@link ChunkLanding}), so the network and the copy
 * overlap. Memory of a confined arena belongs to its owner thread alone: then
 * the chunks are held and the owner {@link #applyHeldChunks applies} them once the copy is
 * complete. A copy {@link #forwarding forwarded} to another worker hands each chunk, through the
 * copier, to a {@link ChunkSink} instead of host memory. Chunks must arrive in order and exactly
 * fill the copy; anything else is a protocol error, since a worker must never write outside the
 * memory the caller named.
 */
final class PendingCopyToHost extends PendingCall<Void> {
    /** Where the chunks of a forwarded copy go. */
    @FunctionalInterface
    interface ChunkSink {
        /**
         * Takes the chunk at {@code offset} of the copy. Copier thread; {@code chunk} is the sink's
         * to release.
         *
         * @throws VgpuException when it cannot: the copy fails with it
         */
        void take(long offset, ByteBuf chunk);
    }

    private final MemorySegment destination;
    /** The forwarded copy's sink, or null for a copy into {@link #destination}. */
    private final ChunkSink sink;

    private final long bytes;
    private final boolean heldForOwner;
    /** Chunks kept for the owner thread, with their offsets; event loop until done, owner after. */
    private final List<ByteBuf> heldChunks = new ArrayList<>();

    private final List<Long> heldOffsets = new ArrayList<>();
    private long received;
    /** Set by whichever thread found the destination freed (event loop or copier), first one wins. */
    private volatile VgpuException destinationFailure;

    private volatile boolean failureKept;

    PendingCopyToHost(MemorySegment destination, long bytes) {
        this(destination, null, bytes);
    }

    private PendingCopyToHost(MemorySegment destination, ChunkSink sink, long bytes) {
        super(ReplyDecoder::empty);
        this.destination = destination;
        this.sink = sink;
        this.bytes = bytes;
        this.heldForOwner = sink == null && !ParallelCopy.isShared(destination);
    }

    /** A copy of {@code bytes} whose chunks go to {@code sink} rather than into host memory. */
    static PendingCopyToHost forwarding(ChunkSink sink, long bytes) {
        return new PendingCopyToHost(null, sink, bytes);
    }

    /** Whether this copy writes any of {@code memory}'s bytes (a forwarded copy writes no host memory). */
    boolean writesInto(MemorySegment memory) {
        return destination != null && ChunkLanding.overlap(destination, memory);
    }

    /** Whether the chunks wait for the destination's owner thread (a confined arena). */
    boolean heldForOwner() {
        return heldForOwner;
    }

    /** Whether {@code thread} may apply the held chunks now. */
    boolean applicableBy(Thread thread) {
        return isDone() && destination.isAccessibleBy(thread);
    }

    /** Whether the last chunk said that the worker keeps an asynchronous failure for the next synchronizing request. */
    boolean failureKept() {
        return failureKept;
    }

    /**
     * Takes one chunk. Event loop.
     *
     * @param failureKept on the last chunk: the worker keeps an asynchronous failure
     * @return whether it was the last one
     */
    boolean accept(long offset, ByteBuf data, boolean more, boolean failureKept, ChunkLanding landing) {
        int length = data.readableBytes();
        if (offset != received || length > bytes - received) {
            throw Frames.violation("DATA chunk of " + length + " bytes at offset " + offset
                    + " does not continue a copy of " + bytes + " bytes after " + received);
        }
        if (heldForOwner) {
            // a copy, not a slice: a chunk in a shared slot keeps the slot until released, and the worker's next
            // chunks may need it before the owner applies this copy (BulkBytePath's contract)
            heldChunks.add(Unpooled.copiedBuffer(data));
            heldOffsets.add(offset);
        } else if (sink != null) {
            if (destinationFailure == null && length > 0) {
                landing.forward(this, sink, offset, data);
            }
        } else if (destinationFailure == null && length > 0) {
            try {
                landing.land(this, destination, offset, data);
            } catch (IllegalStateException freed) {
                destinationFreed(freed);
            }
        }
        received += length;
        if (more) {
            return false;
        }
        if (received != bytes) {
            throw Frames.violation("the copy ended after " + received + " of its " + bytes + " bytes");
        }
        this.failureKept = failureKept;
        landAfter(landing.handedOff());
        synchronized (this) {
            if (destinationFailure != null) {
                fail(destinationFailure);
            } else if (!isDone()) {
                finish();
            }
        }
        return true;
    }

    /** An asynchronous copy's host memory was freed before its data arrived. Event loop or copier. */
    void destinationFreed(IllegalStateException freed) {
        destinationFailed(new VgpuException(
                ErrorCode.CUDA_ERROR_INVALID_VALUE,
                "the host memory of a device-to-host copy was freed before the copy completed",
                freed));
    }

    /** The copy's destination could not take a chunk; the first failure is the copy's. Event loop or copier. */
    void destinationFailed(VgpuException failure) {
        if (destinationFailure == null) {
            destinationFailure = failure;
        }
    }

    /**
     * Throws what the copier found once the copy's chunks have landed; the copy itself may have
     * been done before (its last chunk arrived while earlier ones were still landing).
     */
    void throwIfDestinationFreed() {
        VgpuException failure = destinationFailure;
        if (failure != null) {
            throw new VgpuException(failure.code(), failure.detail(), failure);
        }
    }

    /**
     * Copies the held chunks into the destination; called by its owner thread once the copy is
     * done. A chunk that cannot be applied (the arena was closed meanwhile) is dropped.
     */
    void applyHeldChunks() {
        try {
            for (int i = 0; i < heldChunks.size(); i++) {
                ByteBuf chunk = heldChunks.get(i);
                if (chunk.isReadable() && destination.scope().isAlive()) {
                    ChunkLanding.copyInto(destination, heldOffsets.get(i), chunk);
                }
            }
        } finally {
            releaseHeldChunks();
        }
    }

    /** Drops held chunks unapplied: the copy failed or the connection is closing. */
    void releaseHeldChunks() {
        for (ByteBuf chunk : heldChunks) {
            chunk.release();
        }
        heldChunks.clear();
        heldOffsets.clear();
    }
}
