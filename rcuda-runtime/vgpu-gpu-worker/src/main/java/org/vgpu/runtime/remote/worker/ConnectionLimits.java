package org.vgpu.runtime.remote.worker;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * How many connections a worker keeps at once, and how many of them may be signing in: an accepted connection is
 * counted here until it closes, and among those signing in until its first frame is accepted or it closes.
 */
final class ConnectionLimits {
    private final String workerId;
    private final int maxConnections;
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicInteger signingIn = new AtomicInteger();

    ConnectionLimits(String workerId, int maxConnections) {
        this.workerId = workerId;
        this.maxConnections = maxConnections;
    }

    /** Counts a new connection, open and signing in: empty when the worker keeps it, else why it is refused. */
    Optional<VgpuException> admit() {
        int opened = open.incrementAndGet();
        int waiting = signingIn.incrementAndGet();
        if (opened <= maxConnections && waiting <= GpuWorker.MAX_CONNECTIONS_SIGNING_IN) {
            return Optional.empty();
        }
        return Optional.of(new VgpuException(
                ErrorCode.CUDA_ERROR_NOT_PERMITTED,
                "worker " + workerId + " is busy: "
                        + (waiting > GpuWorker.MAX_CONNECTIONS_SIGNING_IN
                                ? GpuWorker.MAX_CONNECTIONS_SIGNING_IN + " connections are already signing in"
                                : maxConnections + " connections are already open")
                        + "; try again shortly"));
    }

    /** A connection counted by {@link #admit} is no longer signing in: signed in, or closed before. */
    void signedIn() {
        signingIn.decrementAndGet();
    }

    /** A connection counted by {@link #admit} closed. */
    void closed() {
        open.decrementAndGet();
    }

    /** How long a connection may take to open a session: the sign-in bound, or the idle timeout where shorter. */
    static Duration signInBound(WorkerConfig config) {
        return config.idleTimeout().compareTo(GpuWorker.SIGN_IN_BOUND) < 0
                ? config.idleTimeout()
                : GpuWorker.SIGN_IN_BOUND;
    }
}
