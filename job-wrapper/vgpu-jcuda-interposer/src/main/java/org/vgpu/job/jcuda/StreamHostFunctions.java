package org.vgpu.job.jcuda;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.IntConsumer;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * Host functions in stream order ({@code cuLaunchHostFunc}, {@code cuStreamAddCallback}, {@code cudaLaunchHostFunc},
 * {@code cudaStreamAddCallback}), the same on every backend and across migrations, since they are made of calls every
 * {@link VirtualGpu} serves: a host function runs in the program's JVM, on one thread of vgpu's ({@value #THREAD}),
 * once the work queued on its stream before it is done (that thread synchronizes the stream: the default stream's
 * host function, the whole device, as the legacy default stream waits for every stream). Until it has returned, the
 * work queued after it does not reach the vGPU: the program's call that queues it (a launch, a copy, an event record,
 * another host function) waits for the host function first, and a synchronize waits for it as CUDA's does. Which
 * work is after it: work on its stream and on the default stream; for a host function on the default stream, all
 * work on its device. The one difference a program can see: the call that queues work behind a pending host function
 * returns once that function has run, not at once, so a host function must not wait for something the program's
 * thread does after queuing more work on that stream (CUDA forbids a host function to call CUDA; a wait of that kind
 * is the same deadlock one step removed). A host function that queues CUDA work itself gets
 * CUDA_ERROR_NOT_PERMITTED, rather than wait for itself.
 */
final class StreamHostFunctions {
    static final String THREAD = "vgpu host functions";

    /** The host functions not yet run, by the stream they follow: the last queued of each (they run in order). */
    private final Map<Queue, CompletableFuture<Void>> pending = new ConcurrentHashMap<>();

    /** The thread the host functions run on, once started. */
    private volatile Thread runnerThread;

    private final ExecutorService runner = Executors.newSingleThreadExecutor(work -> {
        Thread thread = new Thread(work, THREAD);
        thread.setDaemon(true);
        runnerThread = thread;
        return thread;
    });

    private record Queue(int device, StreamHandle stream) {
        boolean follows(int otherDevice, StreamHandle other) {
            return device == otherDevice
                    && (stream.equals(other)
                            || stream.equals(StreamHandle.DEFAULT)
                            || other.equals(StreamHandle.DEFAULT));
        }
    }

    /**
     * Queues {@code function} behind the work on {@code stream} of {@code gpu} (device {@code device}): it gets 0, or
     * the code of that work's error ({@code api}'s number); with {@code skipOnError}, as {@code cuLaunchHostFunc}, it
     * is not called after an error.
     */
    void add(int device, VirtualGpu gpu, StreamHandle stream, JCudaApi api, boolean skipOnError, IntConsumer function) {
        awaitBefore(device, stream);
        Queue queue = new Queue(device, stream);
        CompletableFuture<Void> done = new CompletableFuture<>();
        // pending before it can run, so that work queued from now on, and the function itself, see it
        pending.put(queue, done);
        done.whenComplete((ignored, failure) -> pending.remove(queue, done));
        runner.execute(() -> {
            try {
                run(gpu, stream, api, skipOnError, function);
            } finally {
                done.complete(null);
            }
        });
    }

    private static void run(
            VirtualGpu gpu, StreamHandle stream, JCudaApi api, boolean skipOnError, IntConsumer function) {
        int status = 0;
        try {
            if (stream.equals(StreamHandle.DEFAULT)) {
                gpu.ctxSynchronize();
            } else {
                gpu.streamSynchronize(stream);
            }
        } catch (VgpuException e) {
            status = api.code(e);
        }
        if (status != 0 && skipOnError) {
            return;
        }
        try {
            function.accept(status);
        } catch (RuntimeException | Error e) {
            Thread thread = Thread.currentThread();
            thread.getUncaughtExceptionHandler().uncaughtException(thread, e);
        }
    }

    /** Waits for the host functions that work queued now on {@code stream} of {@code device} comes after. */
    void awaitBefore(int device, StreamHandle stream) {
        if (Thread.currentThread() == runnerThread) {
            // it would wait for itself; CUDA forbids a host function's CUDA calls the same way
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_NOT_PERMITTED, "a host function queued on a stream must not queue CUDA work");
        }
        if (pending.isEmpty()) {
            return;
        }
        pending.forEach((queue, done) -> {
            if (queue.follows(device, stream)) {
                done.join();
            }
        });
    }

    /** Waits for every host function of {@code device} (a device synchronize, a reset). */
    void awaitDevice(int device) {
        awaitBefore(device, StreamHandle.DEFAULT);
    }

    /**
     * Whether a host function queued on {@code stream} of {@code device} has not run yet (on the default stream: any
     * of the device's), which a query of the stream answers as work not done.
     */
    boolean pendingOn(int device, StreamHandle stream) {
        return pending.keySet().stream()
                .anyMatch(queue -> queue.device() == device
                        && (queue.stream().equals(stream) || stream.equals(StreamHandle.DEFAULT)));
    }

    /** A stream callback's checks, the same in the driver and the runtime: a function, and flags 0 (CUDA's rule). */
    static void requireCallback(Object function, int flags, String call) {
        if (function == null) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, call + ": the function is null");
        }
        if (flags != 0) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, call + ": flags must be 0, got " + flags);
        }
    }
}
