package org.vgpu.runtime.remote.worker;

import java.time.Duration;
import java.util.Objects;

import org.vgpu.common.error.ConfigException;
import org.vgpu.runtime.remote.RemoteTuning;

/**
 * How a GPU worker runs, validated once at start.
 *
 * @param listenHost  address to listen on
 * @param listenPort  port to listen on; 0 picks a free one
 * @param device      the GPU (or emulated device) this worker serves
 * @param workerId    the worker's name in session tokens, reports and errors
 * @param idleTimeout how long the worker waits for a frame (the first connection included) before
 *                    it ends the session and frees the GPU; clients send keepalives well within it
 * @param spinNanos   how long the GPU thread and the event loop poll for the next request before
 *                    they sleep: a request that arrives meanwhile is served without a thread wake-up
 */
public record WorkerConfig(
        String listenHost, int listenPort, int device, String workerId, Duration idleTimeout, long spinNanos) {
    public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(30);

    public WorkerConfig {
        Objects.requireNonNull(listenHost, "listenHost");
        if (listenPort < 0 || listenPort > 65535) {
            throw invalid("listen port must be in [0, 65535], got " + listenPort);
        }
        if (device < 0) {
            throw invalid("device must be >= 0, got " + device);
        }
        if (workerId == null || workerId.isBlank()) {
            throw invalid("worker id must not be blank");
        }
        if (idleTimeout == null || idleTimeout.toMillis() < 1 || idleTimeout.toMillis() > Integer.MAX_VALUE) {
            throw invalid("idle timeout must be between 1 ms and 24 days, got " + idleTimeout);
        }
        if (spinNanos < 0) {
            throw invalid("spin time must be >= 0, got " + spinNanos);
        }
    }

    public WorkerConfig(String listenHost, int listenPort, int device, String workerId, Duration idleTimeout) {
        this(
                listenHost,
                listenPort,
                device,
                workerId,
                idleTimeout,
                RemoteTuning.current().spinNanos());
    }

    private static ConfigException invalid(String detail) {
        return new ConfigException(ConfigException.Code.INVALID, "worker configuration: " + detail);
    }
}
