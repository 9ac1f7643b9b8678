package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.ReplyDecoder;

/**
 * A device-to-host copy in flight. Where the event loop may touch the caller's memory (heap
 * arrays, shared and global native memory) it copies each DATA chunk there as it arrives, so the
 * network and the copy overlap. Memory of a confined arena belongs to its owner thread alone: then
 * the chunks are held and the owner {@link #applyHeldChunks applies} them once the copy is
 * complete. Chunks must arrive in order and exactly fill the copy; anything else is a protocol
 * error, since a worker must never write outside the memory the caller named.
 */
final class PendingCopyToHost extends PendingCall<Void> {
    private final MemorySegment destination;
    private final long bytes;
    private final boolean heldForOwner;
    /** Chunks kept for the owner thread, with their offsets; event loop until done, owner after. */
    private final List<ByteBuf> heldChunks = new ArrayList<>();
    private final List<Long> heldOffsets = new ArrayList<>();
    private long received;
    private VgpuException destinationFailure;
    private volatile boolean failureKept;

    PendingCopyToHost(MemorySegment destination, long bytes) {
        super(ReplyDecoder::empty);
        this.destination = destination;
        this.bytes = bytes;
        this.heldForOwner = !HostMemory.isShared(destination);
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
    boolean accept(long offset, ByteBuf data, boolean more, boolean failureKept) {
        int length = data.readableBytes();
        if (offset != received || length > bytes - received) {
            throw Frames.violation("DATA chunk of " + length + " bytes at offset " + offset + " does not continue a copy of "
                    + bytes + " bytes after " + received);
        }
        if (heldForOwner) {
            heldChunks.add(data.retainedSlice());
            heldOffsets.add(offset);
        } else if (destinationFailure == null && length > 0) {
            try {
                copyInto(destination, offset, data);
            } catch (IllegalStateException freed) {
                // an asynchronous copy whose host memory was freed before the data arrived
                destinationFailure = new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE,
                        "the host memory of a device-to-host copy was freed before the copy completed", freed);
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
        synchronized (this) {
            if (destinationFailure != null) {
                fail(destinationFailure);
            } else if (!isDone()) {
                finish();
            }
        }
        return true;
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
                    copyInto(destination, heldOffsets.get(i), chunk);
                }
            }
        } finally {
            releaseHeldChunks();
        }
    }

    /** Copies {@code data} to {@code destination} at {@code offset}, piece by piece (a large chunk arrives in several buffers). */
    private static void copyInto(MemorySegment destination, long offset, ByteBuf data) {
        for (ByteBuffer piece : data.nioBuffers()) {
            int length = piece.remaining();
            MemorySegment.copy(MemorySegment.ofBuffer(piece), 0, destination, offset, length);
            offset += length;
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
