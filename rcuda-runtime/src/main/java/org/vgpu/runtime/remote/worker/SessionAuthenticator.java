package org.vgpu.runtime.remote.worker;

import org.vgpu.runtime.api.VgpuException;

/**
 * Decides whether a client may open a session on this worker: its session token must entitle it
 * to vGPU {@code vgpuIndex} here. The worker calls it on the HELLO of every connection, before it
 * touches the GPU.
 */
@FunctionalInterface
public interface SessionAuthenticator {

    /** @throws VgpuException VGPU_AUTH_FAILED, saying why, when the token does not grant the session */
    void authenticate(String token, int vgpuIndex) throws VgpuException;
}
