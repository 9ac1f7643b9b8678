package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;

import io.netty.buffer.ByteBuf;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.transport.IdleEndingThreads;
import org.vgpu.runtime.remote.transport.ParallelCopy;

/**
 * Lands the DATA chunks of one connection's device-to-host copies in the callers' memory. A large
 * chunk is copied by one of the connection's copier threads, so the event loop goes back to reading
 * the socket while it lands, and several chunks land at once: on the H200 machines the event loop's
 * copy held a remote read to about 3.4 GB/s, and one copier thread landing chunk after chunk held a
 * striped read to 6 GB/s, its last bytes arrived a third of the copy's time before they had landed.
 *
 * <p>Handing chunks off must not reorder what an app thread sees. The rule: a chunk starts landing
 * only once no chunk handed off before it into the same memory is still landing, and a forwarded
 * chunk only once everything before it has landed, since a sink takes chunks in order; a chunk
 * that must wait holds back those handed off after it, which start in the order they were handed
 * off. So the chunks of one copy, which never overlap, land side by side, and two copies into the
 * same memory land in the order they were asked for. And a call that an app thread waited for (a
 * reply, a copy's last chunk, a connection lost) is not over for that thread until everything
 * handed off before it completed has landed: the call notes {@link #handedOff()} as it completes,
 * and the thread {@link #awaitLanded awaits} that mark, the chunks before it, not those that arrived
 * after, such as the next read a migration queued ahead. Where nothing was handed off that costs
 * one volatile read.
 *
 * <p>Memory of a confined arena belongs to its owner thread alone, so a copy into it is
 * {@link #hold held} until that thread, after a call it waited for, {@link #applyHeldCopies
 * applies} it.
 */
final class ChunkLanding implements AutoCloseable {
    private final int minBytes;
    /** Runs the landings that may start; in any order, as many at once as it has threads. */
    private final ExecutorService copiers;

    /** Guards the queues below and orders the counters' updates; app threads wait on it in {@link #awaitLanded}. */
    private final Object order = new Object();
    /** Landings started and not yet landed, in the order handed off. */
    private final ArrayDeque<Landing> started = new ArrayDeque<>();
    /** Landings that may not start yet, in the order handed off: the first waits for one that is started. */
    private final ArrayDeque<Landing> waiting = new ArrayDeque<>();
    /** Chunks handed off; written by the event loop alone. */
    private volatile long handedOff;
    /** How many chunks from the first handed off on have landed (or were found unlandable), all of them. */
    private volatile long landed;
    /** App threads waiting in {@link #awaitLanded}; a landing wakes them only when there are any. */
    private int waiters;

    /** Device-to-host copies into confined memory, whose chunks wait for the owner thread. */
    private final ConcurrentLinkedQueue<PendingCopyToHost> heldCopies = new ConcurrentLinkedQueue<>();

    /**
     * @param minBytes chunks of at least this size are handed off; 0 hands none off
     * @param copiers  runs the landings, any number at once and in any order
     */
    ChunkLanding(int minBytes, ExecutorService copiers) {
        this.minBytes = minBytes;
        this.copiers = copiers;
    }

    /**
     * Lands through copier threads named {@code name-N}, as many as {@link RemoteTuning#copyThreads}, which end
     * when idle and start again on demand; chunks of {@link RemoteTuning#copierMinBytes} and more.
     */
    static ChunkLanding withCopierThreads(String name) {
        RemoteTuning tuning = RemoteTuning.current();
        return new ChunkLanding(tuning.copierMinBytes(), IdleEndingThreads.pool(tuning.copyThreads(), name));
    }

    /**
     * Copies {@code data} into {@code destination} at {@code offset}, now or through a copier.
     * Event loop; {@code data} stays the caller's to release.
     *
     * @throws IllegalStateException where it copied now and the destination's memory was freed;
     *         the copier reports that to {@code copy} instead
     */
    void land(PendingCopyToHost copy, MemorySegment destination, long offset, ByteBuf data) {
        int length = data.readableBytes();
        if (alreadyThere(destination, offset, data)) {
            // a stripe read it straight into its place (StraightDestinations), expected only where nothing else
            // lands into the copy's memory meanwhile
            return;
        }
        if (minBytes == 0 || (length < minBytes && landed == handedOff)) {
            copyInto(destination, offset, data);
            return;
        }
        ByteBuf chunk = data.retainedSlice();
        Runnable work = () -> landNow(copy, destination, offset, chunk);
        // the connection closing lands it all the same: after what is queued would be out of order, but nothing
        // waits any more
        handOff(new Landing(destination.heapBase().orElse(null), destination.address() + offset, length, work, work));
    }

    /**
     * Hands {@code data}, the chunk at {@code offset} of {@code copy}, to {@code sink} through a
     * copier, always, after everything handed off before and before anything after: a sink may wait
     * (for another connection to drain) where the event loop must not. Event loop; {@code data}
     * stays the caller's to release.
     */
    void forward(PendingCopyToHost copy, PendingCopyToHost.ChunkSink sink, long offset, ByteBuf data) {
        ByteBuf chunk = data.retainedSlice();
        // the connection closing drops it: nothing waits for the copy any more
        handOff(new Landing(ALONE, 0, 0, () -> forwardNow(copy, sink, offset, chunk), chunk::release));
    }

    /** Whether {@code data}'s bytes are those of {@code destination} from {@code offset}: there is nothing to copy. */
    static boolean alreadyThere(MemorySegment destination, long offset, ByteBuf data) {
        return destination.isNative()
                && data.hasMemoryAddress()
                && data.memoryAddress() + data.readerIndex() == destination.address() + offset;
    }

    /**
     * Whether a chunk landing or waiting to (a forwarded one counts, whatever it writes), or a copy held for its owner
     * thread, writes any of {@code memory}: a copy that {@link StraightDestinations} expects must not.
     */
    boolean writesInto(MemorySegment memory) {
        synchronized (order) {
            for (Landing landing : started) {
                if (landing.writes(memory)) {
                    return true;
                }
            }
            for (Landing landing : waiting) {
                if (landing.writes(memory)) {
                    return true;
                }
            }
        }
        for (PendingCopyToHost held : heldCopies) {
            if (held.writesInto(memory)) {
                return true;
            }
        }
        return false;
    }

    /** Starts {@code landing} now if the rule lets it, else queues it. Event loop. */
    private void handOff(Landing landing) {
        boolean startNow;
        synchronized (order) {
            landing.number = handedOff;
            startNow = waiting.isEmpty() && mayStart(landing);
            (startNow ? started : waiting).add(landing);
            handedOff = landing.number + 1;
        }
        if (startNow) {
            start(landing);
        }
    }

    /** Whether nothing started writes what {@code landing} writes. Holds {@link #order}. */
    private boolean mayStart(Landing landing) {
        for (Landing running : started) {
            if (landing.conflictsWith(running)) {
                return false;
            }
        }
        return true;
    }

    private void start(Landing landing) {
        try {
            copiers.execute(landing);
        } catch (RejectedExecutionException closed) {
            landing.closing();
        }
    }

    /** {@code landing} is done: the count moves past every landed chunk in a row, and what waited for it starts. */
    private void landed(Landing landing) {
        List<Landing> startNow = new ArrayList<>(0);
        synchronized (order) {
            started.remove(landing);
            Landing oldest = started.isEmpty() ? waiting.peek() : started.peek();
            landed = oldest == null ? handedOff : oldest.number;
            while (!waiting.isEmpty() && mayStart(waiting.peek())) {
                Landing next = waiting.poll();
                started.add(next);
                startNow.add(next);
            }
            if (waiters > 0) {
                order.notifyAll();
            }
        }
        for (Landing next : startNow) {
            start(next);
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
        }
    }

    /** Copier. */
    private static void landNow(PendingCopyToHost copy, MemorySegment destination, long offset, ByteBuf chunk) {
        try {
            copyInto(destination, offset, chunk);
        } catch (IllegalStateException freed) {
            copy.destinationFreed(freed);
        } finally {
            chunk.release();
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
        synchronized (order) {
            waiters++;
            try {
                while (landed < mark) {
                    try {
                        order.wait();
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

    /** Lands what was handed off, then lets the copier threads end; held copies are dropped unapplied. */
    @Override
    public void close() {
        copiers.shutdown();
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

    /** Whether two segments share bytes: native ones by address, heap ones by array and offset. */
    static boolean overlap(MemorySegment a, MemorySegment b) {
        return sameBytes(
                a.heapBase().orElse(null),
                a.address(),
                a.address() + a.byteSize(),
                b.heapBase().orElse(null),
                b.address(),
                b.address() + b.byteSize());
    }

    /**
     * Whether {@code [startA, endA)} of {@code memoryA} and {@code [startB, endB)} of {@code memoryB} share bytes: the
     * same heap array (null for native memory, whose addresses are the process's) and ranges that overlap.
     */
    private static boolean sameBytes(Object memoryA, long startA, long endA, Object memoryB, long startB, long endB) {
        return memoryA == memoryB && startA < endB && startB < endA;
    }

    /** Stands for the memory of a forwarded chunk: it conflicts with every other chunk, so it lands alone. */
    private static final Object ALONE = new Object();

    /** One chunk handed off: the memory it writes, and the work that lands it. */
    private final class Landing implements Runnable {
        /** The array of heap memory; null for native memory, whose addresses are the process's; {@link #ALONE}. */
        private final Object memory;

        private final long start;
        private final long end;
        private final Runnable work;
        /** Runs instead of {@link #work} on this thread once the copiers were shut down. */
        private final Runnable ifClosing;
        /** Its place in the order handed off; set under {@link #order}. */
        long number;

        Landing(Object memory, long start, long length, Runnable work, Runnable ifClosing) {
            this.memory = memory;
            this.start = start;
            this.end = start + length;
            this.work = work;
            this.ifClosing = ifClosing;
        }

        boolean conflictsWith(Landing earlier) {
            if (memory == ALONE || earlier.memory == ALONE) {
                return true;
            }
            return sameBytes(memory, start, end, earlier.memory, earlier.start, earlier.end);
        }

        /** Whether it may write any of {@code segment}'s bytes (a forwarded chunk counts, whatever it writes). */
        boolean writes(MemorySegment segment) {
            return memory == ALONE
                    || sameBytes(
                            memory,
                            start,
                            end,
                            segment.heapBase().orElse(null),
                            segment.address(),
                            segment.address() + segment.byteSize());
        }

        @Override
        public void run() {
            try {
                work.run();
            } finally {
                landed(this);
            }
        }

        void closing() {
            try {
                ifClosing.run();
            } finally {
                landed(this);
            }
        }
    }
}
