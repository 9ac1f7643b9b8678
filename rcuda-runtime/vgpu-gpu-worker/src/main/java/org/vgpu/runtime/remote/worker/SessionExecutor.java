package org.vgpu.runtime.remote.worker;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import io.netty.channel.Channel;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.protocol.Frame;
import org.vgpu.runtime.remote.protocol.RequestDispatch;

/**
 * The GPU thread of one session and its life: takes the session's request frames from a queue, in
 * order, and hands each to {@link RequestDispatch}, which calls the {@link RequestHandler} that
 * executes it on the worker's local {@link VirtualGpu}; holds the event loop's reading back while
 * too many request bytes are queued; ends the session on a goodbye, a protocol error or the
 * client's going, freeing the vGPU and closing the connection. Only this thread touches the vGPU,
 * so its context and handle maps need no locks; only the event loop touches the channel's
 * pipeline, so replies are handed to it ({@link ReplyBatcher}), gathered into one buffer while
 * more requests are queued.
 *
 * <p>The parts, as grpc-java splits a stream's: this class (lifecycle and flow control),
 * {@link RequestHandler} (what each request means), {@link BulkCopies} (chunked copies and DATA
 * streaming through the staging slots), {@link KeptFailure} (asynchronous failures kept for the
 * next synchronizing request), {@link SessionHandles} (the client's ids) and {@link ReplyBatcher}.
 */
final class SessionExecutor implements Runnable {
    /** Above this many queued request bytes the event loop stops reading, so a fast client cannot fill the heap. */
    static final long PAUSE_READING_BYTES = 32L << 20;

    static final long RESUME_READING_BYTES = 8L << 20;
    private static final Object END = new Object();

    /** How the session ended, for the worker's report. */
    record Outcome(long calls, long busyNanos, boolean clean, String reason) {}

    private final Channel channel;
    private final WorkerConfig config;
    private final LinkedBlockingQueue<Object> queue = new LinkedBlockingQueue<>();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final AtomicBoolean readingPaused = new AtomicBoolean();
    private final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
    private volatile Thread thread;
    private volatile String endReason;
    /** Set once the GPU thread is done: frames that still arrive are released at once. */
    private volatile boolean finished;

    // ---- GPU thread only
    private final ReplyBatcher replies;
    private final KeptFailure failures;
    private final BulkCopies bulk;
    private final RequestHandler handler;
    private boolean stopping;
    private boolean clean;
    private long calls;
    private long busyNanos;

    /**
     * @param replies where the session's replies go: gathered for {@code channel}'s event loop
     *     ({@link ReplyBatcher#toChannel}), or encoded into the bytes the library reads, in the program's own process
     *     ({@link ReplyBatcher#into}, the requests run by {@link #runInline})
     */
    SessionExecutor(
            ReplyBatcher replies,
            Channel channel,
            GpuBackend backend,
            WorkerConfig config,
            TrafficCounter traffic,
            StripeJoins stripeJoins,
            SharedHostRegions hostRegions) {
        this.channel = channel;
        this.config = config;
        this.replies = replies;
        this.failures = new KeptFailure(replies);
        SessionHandles handles = new SessionHandles();
        this.bulk = new BulkCopies(channel, replies, failures, handles, traffic, stripeJoins);
        this.handler = new RequestHandler(backend, config, replies, handles, bulk, failures, hostRegions, this::stop);
    }

    /** Starts the GPU thread. */
    void start() {
        Thread gpuThread = new Thread(this, "vgpu-worker-gpu-" + config.device());
        gpuThread.setDaemon(true);
        thread = gpuThread;
        gpuThread.start();
    }

    /** What answers the session's requests: the driver handles behind them are looked up there, in process. */
    RequestHandler handler() {
        return handler;
    }

    CompletableFuture<Outcome> outcome() {
        return outcome;
    }

    // ---- event loop side

    /** Queues a request frame; the GPU thread releases it. Called on the event loop. */
    void submit(Frame frame) {
        long queued = queuedBytes.addAndGet(frame.body().readableBytes());
        queue.add(frame);
        if (finished) {
            releaseQueued();
            return;
        }
        if (queued > PAUSE_READING_BYTES && readingPaused.compareAndSet(false, true)) {
            channel.config().setAutoRead(false);
        }
    }

    /**
     * Ends the session: the client is gone or broke the rules, so requests still queued are dropped
     * rather than run for nobody. The first reason given is kept.
     */
    void end(String reason) {
        if (endReason == null) {
            endReason = reason;
        }
        queue.add(END);
    }

    /** The event loop saw the channel become writable again; a chunked reply may go on. */
    void writable() {
        Thread gpuThread = thread;
        if (gpuThread != null) {
            LockSupport.unpark(gpuThread);
        }
    }

    // ---- GPU thread

    @Override
    public void run() {
        try {
            while (!stopping) {
                Object item = next();
                if (item == END) {
                    break;
                }
                Frame frame = (Frame) item;
                if (endReason != null) {
                    frame.release();
                    break;
                }
                long start = System.nanoTime();
                try {
                    handle(frame);
                } finally {
                    dequeued(frame);
                    busyNanos += System.nanoTime() - start;
                }
            }
        } catch (InterruptedException e) {
            endReason = endReason == null ? "the worker was interrupted" : endReason;
        } catch (RuntimeException | Error fatal) {
            endReason = "the worker failed: " + fatal;
            throw fatal;
        } finally {
            finishSession();
        }
    }

    // ---- the calling thread, for a session served in the program's own process (InProcessWorker): no GPU thread

    /**
     * Runs {@code frame} on the calling thread, as the GPU thread runs a queued one, and hands its replies to the
     * channel before returning; frees the vGPU when the request ended the session. The caller serialises its calls.
     */
    void runInline(Frame frame) {
        if (stopping || finished) {
            frame.release();
            return;
        }
        long start = System.nanoTime();
        try {
            handle(frame);
        } catch (RuntimeException | Error fatal) {
            stop("the worker failed: " + fatal, false);
            throw fatal;
        } finally {
            frame.release();
            busyNanos += System.nanoTime() - start;
            replies.flush();
            if (stopping) {
                finishSession();
            }
        }
    }

    /** Ends an inline session: frees the vGPU, as the GPU thread does when its session ends. */
    void endInline(String reason) {
        if (!finished) {
            stop(reason, true);
            finishSession();
        }
    }

    private Object next() throws InterruptedException {
        Object item = queue.poll();
        if (item != null) {
            return item;
        }
        replies.flush();
        if (config.spinNanos() > 0) {
            long deadline = System.nanoTime() + config.spinNanos();
            do {
                Thread.onSpinWait();
                item = queue.poll();
                if (item != null) {
                    return item;
                }
            } while (System.nanoTime() < deadline);
        }
        return queue.take();
    }

    private void handle(Frame frame) {
        try {
            if (bulk.startsRequest(frame)) {
                calls++;
            }
            RequestDispatch.dispatch(frame, handler);
        } catch (VgpuException violation) {
            if (violation.code() != ErrorCode.VGPU_PROTOCOL_ERROR) {
                // a value read from a well-framed request that the call refuses (a launch's grid of 0):
                // that request's failure, as on a local vGPU
                failures.failed(frame, violation);
                return;
            }
            replies.reply().error(0, violation);
            stop("protocol error: " + violation.detail(), false);
        }
    }

    private void dequeued(Frame frame) {
        long queued = queuedBytes.addAndGet(-frame.body().readableBytes());
        frame.release();
        if (queued < RESUME_READING_BYTES && readingPaused.compareAndSet(true, false)) {
            channel.eventLoop().execute(() -> channel.config().setAutoRead(true));
        }
    }

    private void stop(String reason, boolean cleanly) {
        if (endReason == null) {
            endReason = reason;
        }
        clean = cleanly;
        stopping = true;
    }

    /** Frees the vGPU (whatever the client left allocated), drops unexecuted requests, closes the connection. */
    private void finishSession() {
        String closeFailure = null;
        try {
            handler.closeGpu();
        } catch (RuntimeException e) {
            closeFailure = VgpuFailure.describe(e);
        }
        replies.flushAndClose();
        finished = true;
        releaseQueued();
        String reason = endReason == null ? "the session ended" : endReason;
        outcome.complete(new Outcome(
                calls,
                busyNanos,
                clean && closeFailure == null,
                closeFailure == null ? reason : reason + "; freeing the vGPU failed: " + closeFailure));
    }

    /** Drops requests that will never run; safe from both threads since each frame is polled once. */
    private void releaseQueued() {
        for (Object item = queue.poll(); item != null; item = queue.poll()) {
            if (item instanceof Frame frame) {
                frame.release();
            }
        }
    }
}
