package org.vgpu.runtime.remote.protocol;

import java.util.Objects;

/**
 * What a worker of protocol version 2 answers to a HELLO's offer of shared memory, in its WELCOME: the path of
 * the region it created for the session and the nonce written into it, or no path and why not ("the client did
 * not offer it", "/dev/shm is missing", ...).
 *
 * @param path  the region's file, empty when the bulk bytes stay in the frames
 * @param nonce the random number in the region's header, which the client checks
 * @param note  why there is no region, empty when there is one
 */
public record SharedRegionOffer(String path, long nonce, String note) {
    /** No region, for the reason {@code note}. */
    public static SharedRegionOffer none(String note) {
        return new SharedRegionOffer("", 0, note);
    }

    public SharedRegionOffer {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(note, "note");
    }

    /** Whether the worker created a region. */
    public boolean offered() {
        return !path.isEmpty();
    }
}
