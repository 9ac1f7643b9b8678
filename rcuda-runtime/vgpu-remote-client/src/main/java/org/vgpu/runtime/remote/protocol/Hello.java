package org.vgpu.runtime.remote.protocol;

import org.vgpu.runtime.api.VaWindow;

/**
 * The client's opening frame ({@link Opcode#HELLO}): which protocol it speaks, the session token
 * that entitles it to the worker, the vGPU window its allocations will live in and, from protocol
 * version 2, whether it offers to take bulk bytes through shared memory (it does when it believes the
 * worker shares its host), how many extra connections it would stripe bulk bytes over, or, on such a stripe
 * connection, that it joins a session as stripe {@code stripeIndex} (its token then is the session's stripe key
 * from WELCOME, not a session token).
 *
 * @param stripes     stripe connections the client would open, 0 for none
 * @param stripeIndex which stripe this connection is, or -1 when it opens a session
 */
public record Hello(
        int protocolVersion, String token, VaWindow window, boolean offersSharedMemory, int stripes, int stripeIndex) {
    /** A HELLO that offers nothing beyond the frames. */
    public Hello(int protocolVersion, String token, VaWindow window) {
        this(protocolVersion, token, window, false);
    }

    /** A HELLO that opens a session and offers no stripes. */
    public Hello(int protocolVersion, String token, VaWindow window, boolean offersSharedMemory) {
        this(protocolVersion, token, window, offersSharedMemory, 0, -1);
    }

    /** Whether this connection joins an open session as one of its stripes, rather than opening one. */
    public boolean joinsStripe() {
        return stripeIndex >= 0;
    }

    @Override
    public String toString() {
        // never the token: it is a credential
        return "Hello[version " + protocolVersion + ", " + window + (offersSharedMemory ? ", offers shared memory" : "")
                + (stripes > 0 ? ", offers " + stripes + " stripes" : "")
                + (joinsStripe() ? ", joins as stripe " + stripeIndex : "")
                + "]";
    }
}
