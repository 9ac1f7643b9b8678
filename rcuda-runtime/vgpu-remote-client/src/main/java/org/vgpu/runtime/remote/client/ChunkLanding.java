package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import io.netty.buffer.ByteBuf;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.transport.ParallelCopy;

/**
 * Lands the DATA chunks of one connection's device-to-host copies in the callers' memory. A large
 * chunk is copied by a thread of the connection's own, the copier, so the event loop goes back to
 * reading the socket while it lands: on the H200 machines the event loop's copy into the caller's
 * memory held a remote read to about 3.4 GB/s, and 5 GB/s without it.
 *
 * <p>Handing chunks off must not reorder what an app thread sees. The copier takes chunks in the
 * order the event loop hands them over; once anything waits for it, every chunk goes through it, so
 * two copies into the same memory land in the order they were asked for. And a call that an app
 * thread waited for (a reply, a copy's last chunk, a connection lost) is not over for that thread
 * until everything handed off before it completed has landed: the call notes {@link #handedOff()}
 * as it completes, and the thread {@link #awaitLanded awaits} that mark, not the chunks that
 * arrived after, such as those of the next read a migration queued ahead. Where nothing was handed
 * off that costs one volatile read.
 *
 * <p>Memory of a confined arena belongs to its owner thread alone, so a copy into it is
 * {@link #hold held} until that thread, after a call it waited for, {@link #applyHeldCopies
 * applies} it.
 */
@SuppressWarnings("NonAtomicVolatileUpdate") // each counter has one writer thread (its field says which)
final class ChunkLanding implements AutoCloseable {
    private final int minBytes;
    /** Runs one task at a time in the order given, so chunks land in the order they were handed off. */
    private final ExecutorService copier;
    /** Chunks handed off; written by the event loop alone. */
    private volatile long handedOff;
    /** Chunks landed (or found unlandable); written by the copier alone. */
    private volatile long landed;
    /** App threads waiting in {@link #awaitLanded}; the copier wakes them only when there are any. */
    private volatile int waiters;

    private final Object landing = new Object();
    /** Device-to-host copies into confined memory, whose chunks wait for the owner thread. */
    private final ConcurrentLinkedQueue<PendingCopyToHost> heldCopies = new ConcurrentLinkedQueue<>();

    /**
     * @param minBytes chunks of at least this size are handed off; 0 hands none off
     * @param copier   runs one task at a time, in the order given
     */
    ChunkLanding(int minBytes, ExecutorService copier) {
        this.minBytes = minBytes;
        this.copier = copier;
    }

    /**
     * Lands through a copier thread named {@code name}, which ends when idle and starts again on
     * demand; chunks of {@link RemoteTuning#copierMinBytes} and more.
     */
    static ChunkLanding withCopierThread(String name) {
        ThreadPoolExecutor copier = new ThreadPoolExecutor(
                1,
                1,
                10,
                TimeUnit.SECONDS,
                new LinkedBlockingQueue<>(),
                task -> Thread.ofPlatform().name(name).daemon().unstarted(task));
        copier.allowCoreThreadTimeOut(true);
        return new ChunkLanding(RemoteTuning.current().copierMinBytes(), copier);
    }

    /**
     * Copies {@code data} into {@code destination} at {@code offset}, now or through the copier.
     * Event loop; {@code data} stays the caller's to release.
     *
     * @throws IllegalStateException where it copied now and the destination's memory was freed;
     *         the copier reports that to {@code copy} instead
     */
    void land(PendingCopyToHost copy, MemorySegment destination, long offset, ByteBuf data) {
        if (minBytes == 0 || (data.readableBytes() < minBytes && landed == handedOff)) {
            copyInto(destination, offset, data);
            return;
        }
        ByteBuf chunk = data.retainedSlice();
        handedOff++;
        try {
            copier.execute(() -> landNow(copy, destination, offset, chunk));
        } catch (RejectedExecutionException closed) {
            // the connection is closing: land it here, after what is queued would be out of order, but nothing waits
            // any more
            landNow(copy, destination, offset, chunk);
        }
    }

    /**
     * Hands {@code data}, the chunk at {@code offset} of {@code copy}, to {@code sink} through the
     * copier, always: a sink may wait (for another connection to drain) where the event loop must
     * not. Event loop; {@code data} stays the caller's to release.
     */
    void forward(PendingCopyToHost copy, PendingCopyToHost.ChunkSink sink, long offset, ByteBuf data) {
        ByteBuf chunk = data.retainedSlice();
        handedOff++;
        try {
            copier.execute(() -> forwardNow(copy, sink, offset, chunk));
        } catch (RejectedExecutionException closed) {
            // the connection is closing: nothing waits for the copy any more
            chunk.release();
            landed++;
        }
    }

    /** Copier. */
    private void forwardNow(PendingCopyToHost copy, PendingCopyToHost.ChunkSink sink, long offset, ByteBuf chunk) {
        try {
            sink.take(offset, chunk);
        } catch (VgpuException failed) {
            copy.destinationFailed(failed);
        } catch (RuntimeException failed) {
            copy.destinationFailed(new VgpuException(
                    ErrorCode.CUDA_ERROR_UNKNOWN,
                    "a forwarded chunk could not be sent on: " + VgpuFailure.describe(failed),
                    failed));
        } finally {
            landedOne();
        }
    }

    /** Copier. */
    private void landNow(PendingCopyToHost copy, MemorySegment destination, long offset, ByteBuf chunk) {
        try {
            copyInto(destination, offset, chunk);
        } catch (IllegalStateException freed) {
            copy.destinationFreed(freed);
        } finally {
            chunk.release();
            landedOne();
        }
    }

    /** Copier. */
    private void landedOne() {
        landed++;
        if (waiters > 0) {
            synchronized (landing) {
                landing.notifyAll();
            }
        }
    }

    /** Chunks handed off so far: the mark a call that completes now must wait for. */
    long handedOff() {
        return handedOff;
    }

    /**
     * Returns once the first {@code mark} chunks handed off are in their callers' memory. An app
     * thread calls it after each call it waited for, before it returns to the app; an interrupt is
     * kept for the caller, since the chunks land whatever it does.
     */
    void awaitLanded(long mark) {
        if (landed >= mark) {
            return;
        }
        boolean interrupted = false;
        synchronized (landing) {
            waiters++;
            try {
                while (landed < mark) {
                    try {
                        landing.wait();
                    } catch (InterruptedException e) {
                        interrupted = true;
                    }
                }
            } finally {
                waiters--;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Keeps {@code copy}, whose destination is confined memory, until its owner thread applies it. App thread. */
    void hold(PendingCopyToHost copy) {
        heldCopies.add(copy);
    }

    /** Forgets a held copy whose request was never sent. */
    void forget(PendingCopyToHost copy) {
        heldCopies.remove(copy);
    }

    /**
     * Applies the device-to-host copies into confined memory of this thread that have completed:
     * every synchronizing call does, after its reply, which the worker sends only after the data
     * of every earlier copy.
     */
    void applyHeldCopies() {
        if (heldCopies.isEmpty()) {
            return;
        }
        Thread self = Thread.currentThread();
        for (PendingCopyToHost copy : heldCopies) {
            if (copy.applicableBy(self) && heldCopies.remove(copy)) {
                if (copy.failed()) {
                    copy.releaseHeldChunks();
                } else {
                    copy.applyHeldChunks();
                }
            }
        }
    }

    /** Lands what was handed off, then lets the copier's thread end; held copies are dropped unapplied. */
    @Override
    public void close() {
        copier.shutdown();
        for (PendingCopyToHost copy = heldCopies.poll(); copy != null; copy = heldCopies.poll()) {
            copy.releaseHeldChunks();
        }
    }

    /**
     * Copies {@code data} to {@code destination} at {@code offset}: a large chunk by several threads at once
     * ({@link ParallelCopy}), returning once it has landed, so chunks still land in the order they are copied.
     */
    static void copyInto(MemorySegment destination, long offset, ByteBuf data) {
        ParallelCopy.shared().copy(data, data.readerIndex(), data.readableBytes(), destination, offset);
    }
}
