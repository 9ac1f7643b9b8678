package org.vgpu.runtime.remote.protocol;

import org.vgpu.runtime.api.VaWindow;

/**
 * The client's opening frame ({@link Opcode#HELLO}): which protocol it speaks, the session token
 * that entitles it to the worker, the vGPU window its allocations will live in and, from protocol
 * version 2, whether it offers to take bulk bytes through shared memory (it does when it believes the
 * worker shares its host).
 */
public record Hello(int protocolVersion, String token, VaWindow window, boolean offersSharedMemory) {
    /** A HELLO that offers nothing beyond the frames. */
    public Hello(int protocolVersion, String token, VaWindow window) {
        this(protocolVersion, token, window, false);
    }

    @Override
    public String toString() {
        // never the token: it is a credential
        return "Hello[version " + protocolVersion + ", " + window + (offersSharedMemory ? ", offers shared memory" : "")
                + "]";
    }
}
