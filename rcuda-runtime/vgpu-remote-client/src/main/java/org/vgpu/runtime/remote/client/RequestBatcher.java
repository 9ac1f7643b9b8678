package org.vgpu.runtime.remote.client;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;

import org.vgpu.runtime.remote.protocol.Frames;
import org.vgpu.runtime.remote.protocol.RequestEncoder;

/**
 * The requests of one connection not yet written, and their ids. App threads encode requests
 * straight into the batch under one lock, so the order of requests on the wire is the order the
 * calls were made in; a caller holds the lock ({@link #lock}) from the request's id to its flush,
 * around everything else that must happen in that order. When a caller flushes, the whole batch
 * is handed to the event loop at once, the only thread that touches the channel.
 */
final class RequestBatcher {
    private final ReentrantLock lock = new ReentrantLock();
    private final RemoteConfig config;
    private final ConnectionLoss loss;
    private final RemoteTraffic traffic;
    /** Set once by {@link #attach} before the connection is handed out. */
    private Channel channel;

    private volatile Thread writabilityWaiter;

    // guarded by lock
    private final RequestEncoder encoder = new RequestEncoder();
    private final List<ByteBuf> parts = new ArrayList<>();
    private ByteBuf current;
    private int batchedFrames;
    private int nextRequestId = 1;

    RequestBatcher(RemoteConfig config, ConnectionLoss loss, RemoteTraffic traffic) {
        this.config = config;
        this.loss = loss;
        this.traffic = traffic;
    }

    /** The channel the batches go to, once it exists. */
    void attach(Channel connected) {
        channel = connected;
    }

    void lock() {
        lock.lock();
    }

    void unlock() {
        lock.unlock();
    }

    /** A fresh request id; ids wrap around past 0, the id of requests no call waits for. Lock held. */
    int nextId() {
        int id = nextRequestId;
        nextRequestId = id == Integer.MAX_VALUE ? 1 : id + 1;
        return id;
    }

    /** Adds one request to the batch, or nothing where encoding it fails. Lock held. */
    void append(WorkerConnection.Request request, int id) {
        ByteBuf batch = current();
        int mark = batch.writerIndex();
        try {
            request.encode(encoder.wrap(batch), id);
        } catch (RuntimeException e) {
            batch.writerIndex(mark);
            throw e;
        }
        batchedFrames++;
    }

    /** The encoder, writing at the end of the batch, for a frame whose bytes follow its header. Lock held. */
    RequestEncoder frameEncoder() {
        return encoder.wrap(current());
    }

    /**
     * Ends the batch's current buffer and adds {@code bytes}, written after it as they are: the
     * body of the frame whose header {@link #frameEncoder} wrote last. Lock held.
     */
    void appendAsIs(ByteBuf bytes) {
        parts.add(current);
        current = null;
        parts.add(bytes);
    }

    /** Where the next frame written through {@link #frameEncoder} starts, for {@link #addFlags}. Lock held. */
    int frameStart() {
        return current().writerIndex();
    }

    /** Sets {@code flags} on the frame that starts at {@code frameStart} of the current buffer. Lock held. */
    void addFlags(int frameStart, int flags) {
        Frames.addFlags(current(), frameStart, flags);
    }

    /** Counts a frame written through {@link #frameEncoder}. Lock held. */
    void frameAdded() {
        batchedFrames++;
    }

    /** Whether the batch reached its size bound. Lock held. */
    boolean full() {
        return batchedFrames >= config.batchFrames()
                || (current != null && current.readableBytes() >= config.batchBytes());
    }

    private ByteBuf current() {
        if (current == null) {
            current = channel.alloc().directBuffer(4096);
        }
        return current;
    }

    /**
     * Counts bytes a request moved through a shared slot rather than in its frame, as sent, so that the counters say
     * what the calls moved whichever path the bytes took. Lock held.
     */
    void sentOutsideFrames(int bytes) {
        traffic.sent(0, bytes);
    }

    /**
     * Hands the batch to the event loop: lazy writes and one flush, so the loop wakes once. Then
     * waits while the connection's outbound buffer is over its high-water mark, which bounds the
     * memory a fast writer can pile up (writes queued from here count towards it). Lock held.
     */
    void flush() {
        if (current != null && current.isReadable()) {
            parts.add(current);
            current = null;
        }
        int frames = batchedFrames;
        batchedFrames = 0;
        if (parts.isEmpty()) {
            return;
        }
        long bytes = 0;
        for (ByteBuf part : parts) {
            bytes += part.readableBytes();
            channel.write(part, channel.voidPromise());
        }
        traffic.sent(frames, bytes);
        parts.clear();
        channel.flush();
        awaitWritable();
    }

    private void awaitWritable() {
        if (channel.isWritable()) {
            return;
        }
        writabilityWaiter = Thread.currentThread();
        long start = System.nanoTime();
        try {
            while (!channel.isWritable()) {
                loss.checkAlive();
                LockSupport.parkNanos(this, 1_000_000);
            }
        } finally {
            writabilityWaiter = null;
            traffic.waited(System.nanoTime() - start);
        }
    }

    /** Wakes the caller waiting for the channel to drain: it did, or the connection is lost. Event loop. */
    void wakeWriter() {
        Thread writer = writabilityWaiter;
        if (writer != null) {
            LockSupport.unpark(writer);
        }
    }

    /** Drops what was never written: the connection is closing. */
    void release() {
        lock.lock();
        try {
            for (ByteBuf part : parts) {
                part.release();
            }
            parts.clear();
            if (current != null) {
                current.release();
                current = null;
            }
        } finally {
            lock.unlock();
        }
    }
}
