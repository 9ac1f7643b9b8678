package org.vgpu.runtime.remote.client;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;

import io.netty.buffer.ByteBuf;

import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.protocol.Frames;

/**
 * The calls of one connection waiting for their replies, by request id. App threads register a
 * call as they encode its request and then {@link #await} it; the event loop completes it when its
 * reply comes, noting the chunks handed to the copier by then, or fails them all when the
 * connection is lost.
 */
final class WaitingCalls {
    private final ConcurrentHashMap<Integer, PendingCall<?>> waiting = new ConcurrentHashMap<>();
    private final ConnectionLoss loss;
    private final ChunkLanding landing;
    private final long spinNanos;
    private final RemoteTraffic traffic;

    WaitingCalls(ConnectionLoss loss, ChunkLanding landing, long spinNanos, RemoteTraffic traffic) {
        this.loss = loss;
        this.landing = landing;
        this.spinNanos = spinNanos;
        this.traffic = traffic;
    }

    /** Registers {@code call} for request {@code id}; called under the batch lock, after the loss was checked. */
    void register(int id, PendingCall<?> call) {
        waiting.put(id, call);
        if (loss.isLost() && waiting.remove(id) != null) {
            // lost between checkAlive and put: the loss handler may have missed this call
            loss.checkAlive();
        }
    }

    /**
     * Registers {@code call} under a fresh id and adds its request to the batch; neither where the
     * request cannot be encoded. Batch lock held, the loss checked.
     *
     * @return the request's id
     */
    int append(RequestBatcher batcher, WorkerConnection.Request request, PendingCall<?> call) {
        int id = batcher.nextId();
        register(id, call);
        try {
            batcher.append(request, id);
        } catch (RuntimeException e) {
            forget(id);
            throw e;
        }
        return id;
    }

    /** Whether a device-to-host copy other than {@code self} waits for data it will write into {@code memory}. */
    boolean copyToHostWritingInto(MemorySegment memory, PendingCopyToHost self) {
        for (PendingCall<?> call : waiting.values()) {
            if (call != self && call instanceof PendingCopyToHost copy && copy.writesInto(memory)) {
                return true;
            }
        }
        return false;
    }

    /** Forgets request {@code id}, whose request was never sent. */
    void forget(int id) {
        waiting.remove(id);
    }

    /**
     * Waits for {@code call}, then for every chunk handed to the copier before it ended (the app
     * must find its memory as the worker's order of replies says), then applies the held copies.
     */
    <T> T await(PendingCall<T> call, long timeoutNanos) {
        long start = System.nanoTime();
        try {
            return call.await(spinNanos, timeoutNanos);
        } finally {
            landing.awaitLanded(call.landingMark(landing));
            landing.applyHeldCopies();
            loss.settled();
            traffic.waited(System.nanoTime() - start);
        }
    }

    // ---- event loop

    /** The OK reply of request {@code id}. */
    void succeed(int id, ByteBuf result) {
        PendingCall<?> call = waiting.remove(id);
        if (call == null) {
            throw Frames.violation("OK for request " + id + ", which no call waits for");
        }
        call.landAfter(landing.handedOff());
        call.succeed(result);
    }

    /** The ERROR reply of request {@code id}. */
    void fail(int id, VgpuException failure) {
        PendingCall<?> call = waiting.remove(id);
        if (call == null) {
            throw Frames.violation("ERROR for request " + id + ", which no call waits for: " + failure.getMessage());
        }
        call.landAfter(landing.handedOff());
        call.fail(failure);
    }

    /** A DATA chunk of the device-to-host copy of request {@code id}. */
    void data(int id, boolean more, boolean failureKept, long offset, ByteBuf bytes) {
        if (!(waiting.get(id) instanceof PendingCopyToHost copy)) {
            throw Frames.violation("DATA for request " + id + ", which is no device-to-host copy in flight");
        }
        if (copy.accept(offset, bytes, more, failureKept, landing)) {
            waiting.remove(id);
        }
    }

    /** Fails every waiting call with the connection's loss. */
    void failAll(VgpuException lost) {
        for (Integer id : waiting.keySet()) {
            PendingCall<?> call = waiting.remove(id);
            if (call != null) {
                call.landAfter(landing.handedOff());
                call.fail(lost);
            }
        }
    }
}
