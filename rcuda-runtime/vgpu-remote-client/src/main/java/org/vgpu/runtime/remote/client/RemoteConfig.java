package org.vgpu.runtime.remote.client;

import java.time.Duration;

import org.vgpu.common.error.ConfigException;
import org.vgpu.runtime.remote.RemoteTuning;
import org.vgpu.runtime.remote.protocol.RequestDecoder;

/**
 * How a remote vGPU talks to its worker, validated once.
 *
 * @param batchBytes       asynchronous requests are gathered and written together until a
 *                         synchronizing call or this many bytes (Shadowfax: batching made remote
 *                         launches nearly as cheap as local ones)
 * @param batchFrames      ... or this many requests, whichever comes first
 * @param chunkBytes       copies are split into chunks of this size, pipelined so that the network
 *                         and the device's copy engine work at the same time
 * @param spinNanos        how long a thread waiting for a reply, and the event loop, poll before
 *                         they sleep; a reply that arrives meanwhile costs no thread wake-up
 * @param connectTimeout   how long to wait for the TCP connection and the handshake
 * @param goodbyeTimeout   how long {@code close} waits for the worker to free the vGPU
 */
public record RemoteConfig(
        int batchBytes,
        int batchFrames,
        int chunkBytes,
        long spinNanos,
        Duration connectTimeout,
        Duration goodbyeTimeout) {
    public RemoteConfig {
        if (batchBytes < 256 || batchBytes > (16 << 20)) {
            throw invalid("batch size must be in [256 B, 16 MiB], got " + batchBytes);
        }
        if (batchFrames < 1) {
            throw invalid("batch frame count must be >= 1, got " + batchFrames);
        }
        if (chunkBytes < 4096 || chunkBytes > RequestDecoder.MAX_CHUNK_BYTES) {
            throw invalid("chunk size must be in [4 KiB, " + RequestDecoder.MAX_CHUNK_BYTES + " B], got " + chunkBytes);
        }
        if (spinNanos < 0) {
            throw invalid("spin time must be >= 0, got " + spinNanos);
        }
        if (connectTimeout == null
                || connectTimeout.toMillis() < 1
                || goodbyeTimeout == null
                || goodbyeTimeout.isNegative()) {
            throw invalid("connect timeout must be >= 1 ms and goodbye timeout >= 0");
        }
    }

    /**
     * 64 KiB or 256 requests per batch, chunks and polling as {@link RemoteTuning} says, 30 s to connect and open
     * the session (a worker creating a CUDA context on a busy node takes seconds), 30 s to say goodbye.
     */
    public static RemoteConfig defaults() {
        RemoteTuning tuning = RemoteTuning.current();
        return new RemoteConfig(
                64 << 10, 256, tuning.chunkBytes(), tuning.spinNanos(), Duration.ofSeconds(30), Duration.ofSeconds(30));
    }

    /** The same with another connect timeout. */
    public RemoteConfig withConnectTimeout(Duration timeout) {
        return new RemoteConfig(batchBytes, batchFrames, chunkBytes, spinNanos, timeout, goodbyeTimeout);
    }

    /** The same with another chunk size. */
    public RemoteConfig withChunkBytes(int bytes) {
        return new RemoteConfig(batchBytes, batchFrames, bytes, spinNanos, connectTimeout, goodbyeTimeout);
    }

    private static ConfigException invalid(String detail) {
        return new ConfigException(ConfigException.Code.INVALID, "remote configuration: " + detail);
    }
}
