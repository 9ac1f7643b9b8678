package org.vgpu.runtime.remote.client;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The counters behind {@link RemoteCounters}, kept off the hot path's cost: frames and bytes sent are added once per
 * flush by the thread holding the batch lock, bytes received once per frame by the event loop, each a single writer
 * that updates with an opaque store (no fence, no allocation); the wait, which app threads add concurrently, is a
 * {@link LongAdder}, touched only by calls that wait for a reply anyway.
 */
final class RemoteTraffic {
    /** Written under the batch lock only. */
    private final AtomicLong framesSent = new AtomicLong();
    /** Written under the batch lock only. */
    private final AtomicLong bytesSent = new AtomicLong();
    /** Written by the connection's event loop only. */
    private final AtomicLong bytesReceived = new AtomicLong();

    private final LongAdder waitNanos = new LongAdder();

    /** A batch went out. Batch lock held. */
    void sent(int frames, long bytes) {
        framesSent.setOpaque(framesSent.getPlain() + frames);
        bytesSent.setOpaque(bytesSent.getPlain() + bytes);
    }

    /** A reply frame came in. Event loop. */
    void received(long bytes) {
        bytesReceived.setOpaque(bytesReceived.getPlain() + bytes);
    }

    /** An app thread waited this long for a reply. */
    void waited(long nanos) {
        waitNanos.add(nanos);
    }

    RemoteCounters snapshot() {
        return new RemoteCounters(
                framesSent.getOpaque(), bytesSent.getOpaque(), bytesReceived.getOpaque(), waitNanos.sum());
    }
}
