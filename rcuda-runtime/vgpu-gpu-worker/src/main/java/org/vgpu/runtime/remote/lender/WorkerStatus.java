package org.vgpu.runtime.remote.lender;

import java.time.Duration;
import java.util.Optional;

import org.vgpu.common.net.Endpoint;

/**
 * One worker of a {@link Lender} as {@code status} shows it.
 *
 * @param endpoint where it listens; empty while it is starting
 * @param age time since it was started
 */
public record WorkerStatus(int device, String workerId, Optional<Endpoint> endpoint, State state, Duration age) {
    public enum State {
        /** Launched, not listening yet. */
        STARTING,
        /** Listening, waiting in the pool to be handed out. */
        WARM,
        /** Handed out by {@code open}: its session belongs to a job. */
        LENT
    }
}
