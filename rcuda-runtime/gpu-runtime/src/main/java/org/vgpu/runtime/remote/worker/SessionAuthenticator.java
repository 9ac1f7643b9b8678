package org.vgpu.runtime.remote.worker;

/**
 * Decides whether a client may open a session on this worker: its session token must entitle it
 * to vGPU {@code vgpuIndex} here. The worker calls it on the HELLO of every connection, before it
 * touches the GPU.
 */
@FunctionalInterface
public interface SessionAuthenticator {

    /**
     * @throws org.vgpu.common.error.AuthException saying why, when the token does not grant the
     *         session; the worker answers any failure here with VGPU_AUTH_FAILED
     */
    void authenticate(String token, int vgpuIndex);
}
