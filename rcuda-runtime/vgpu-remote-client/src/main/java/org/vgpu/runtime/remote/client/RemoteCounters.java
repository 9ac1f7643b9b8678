package org.vgpu.runtime.remote.client;

/**
 * What a remote vGPU has cost its app so far, for the tracker's cost model: how much the app forwarded to its
 * worker and how long it waited for the worker. Cumulative since the session opened.
 *
 * @param calls         request frames sent to the worker (a copy sent in chunks counts each chunk)
 * @param bytesSent     bytes of those frames, headers included
 * @param bytesReceived bytes of the worker's reply frames, headers included
 * @param waitNanos     time app threads spent waiting for the worker's replies (summed over threads)
 */
public record RemoteCounters(long calls, long bytesSent, long bytesReceived, long waitNanos) {
    public static final RemoteCounters ZERO = new RemoteCounters(0, 0, 0, 0);

    /** Both counts added: a vGPU's figures over the sessions it had. */
    public RemoteCounters plus(RemoteCounters other) {
        return new RemoteCounters(
                calls + other.calls,
                bytesSent + other.bytesSent,
                bytesReceived + other.bytesReceived,
                waitNanos + other.waitNanos);
    }

    /** Bytes both ways. */
    public long bytes() {
        return bytesSent + bytesReceived;
    }

    public long waitMillis() {
        return waitNanos / 1_000_000;
    }
}
