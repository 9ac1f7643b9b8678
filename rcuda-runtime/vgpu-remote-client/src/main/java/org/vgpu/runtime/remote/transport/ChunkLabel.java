package org.vgpu.runtime.remote.transport;

/**
 * Which request a chunk's bytes belong to and where in that request's bytes they start: what a chunk's frame says of
 * it, told to the path too, so that a receiver may know where the bytes go before their frame arrives (the stripes
 * carry it in each chunk's header).
 *
 * @param requestId the id of the request whose frame names the chunk
 * @param offset    where the chunk's bytes start in that request's bytes, from 0
 */
public record ChunkLabel(int requestId, long offset) {
    public ChunkLabel {
        if (offset < 0) {
            throw new IllegalArgumentException("a chunk's offset must be >= 0, got " + offset);
        }
    }
}
