package org.vgpu.runtime.remote.protocol;

import org.vgpu.runtime.api.VaWindow;

/**
 * The client's opening frame ({@link Opcode#HELLO}): which protocol it speaks, the session token
 * that entitles it to the worker, and the vGPU window its allocations will live in.
 */
public record Hello(int protocolVersion, String token, VaWindow window) {
    @Override
    public String toString() {
        // never the token: it is a credential
        return "Hello[version " + protocolVersion + ", " + window + "]";
    }
}
