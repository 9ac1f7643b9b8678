package org.vgpu.runtime.remote.client;

import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * A request whose reply an app thread waits for. The event loop completes it (reading the result
 * while it still holds the frame, so no buffer crosses threads); the waiting thread first polls
 * for a while, then parks, so a quick reply costs no wake-up.
 *
 * @param <T> the result
 */
class PendingCall<T> {
    private final Function<ByteBuf, T> resultReader;
    private volatile boolean done;
    /** The chunks handed to the copier when it completed ({@link ChunkLanding#handedOff()}); -1 where nobody noted it. */
    private volatile long landingMark = -1;

    private volatile Thread waiter;
    private T result;
    private VgpuException failure;

    /** @param resultReader reads the OK reply's result; it runs on the event loop */
    PendingCall(Function<ByteBuf, T> resultReader) {
        this.resultReader = resultReader;
    }

    /** The OK reply arrived. Event loop. */
    synchronized void succeed(ByteBuf okResult) {
        if (done) {
            return;
        }
        try {
            result = resultReader.apply(okResult);
        } catch (VgpuException e) {
            failure = e;
        }
        finish();
    }

    /** The request failed, or the connection did. Event loop, or whoever sees the connection lost. */
    synchronized void fail(VgpuException e) {
        if (!done) {
            failure = e;
            finish();
        }
    }

    /** Notes the copier's mark before completing the call; the event loop, or whoever fails it. */
    final void landAfter(long mark) {
        landingMark = mark;
    }

    /** What an app thread must await after this call: its mark, or everything handed off by now where none was noted. */
    final long landingMark(ChunkLanding landing) {
        long mark = landingMark;
        return mark < 0 ? landing.handedOff() : mark;
    }

    final boolean isDone() {
        return done;
    }

    /** Whether it is done and failed. */
    final boolean failed() {
        return done && failure != null;
    }

    /** Publishes the outcome; callers hold this object's lock. */
    protected final void finish() {
        done = true;
        Thread parked = waiter;
        if (parked != null) {
            LockSupport.unpark(parked);
        }
    }

    /**
     * Waits for the reply; the request has been sent, so waiting cannot be abandoned, and an
     * interrupt is kept for the caller instead. After {@code timeoutNanos} (Long.MAX_VALUE: never)
     * it gives up with VGPU_WORKER_LOST.
     *
     * @throws VgpuException the failure the worker reported, rethrown with this thread's stack
     */
    T await(long spinNanos, long timeoutNanos) {
        long start = System.nanoTime();
        if (!done && spinNanos > 0) {
            do {
                Thread.onSpinWait();
            } while (!done && System.nanoTime() - start < spinNanos);
        }
        if (!done) {
            boolean interrupted = false;
            waiter = Thread.currentThread();
            while (!done) {
                long left = timeoutNanos - (System.nanoTime() - start);
                if (left <= 0) {
                    fail(new VgpuException(
                            ErrorCode.VGPU_WORKER_LOST, "no reply within " + timeoutNanos / 1_000_000 + " ms"));
                    break;
                }
                LockSupport.parkNanos(this, left);
                interrupted |= Thread.interrupted();
            }
            waiter = null;
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        if (failure != null) {
            throw new VgpuException(failure.code(), failure.detail(), failure);
        }
        return result;
    }
}
