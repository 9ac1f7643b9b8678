package org.vgpu.runtime.remote.worker;

import java.util.Optional;

import org.vgpu.common.security.TokenVerifier;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.remote.transport.PeerUser;

/**
 * Decides whether a client may open a session on this worker: its session token must entitle it
 * to exactly the vGPU and address window its HELLO asks for. The worker calls it on the HELLO of
 * every connection, before it touches the GPU.
 */
@FunctionalInterface
public interface SessionAuthenticator {

    /**
     * @throws org.vgpu.common.error.AuthException saying why, when the token does not grant the
     *         session; the worker answers any failure here with VGPU_AUTH_FAILED
     */
    void authenticate(String token, VaWindow window);

    /**
     * The check the worker makes: with the user of the connecting process, which the kernel gives for a Unix domain
     * socket (empty over TCP). Tokens alone decide, unless an authenticator asks for the peer ({@link
     * SameUserSessions}).
     */
    default void authenticate(String token, VaWindow window, Optional<PeerUser> peer) {
        authenticate(token, window);
    }

    /** Sessions whose token {@code verifier} accepts for the HELLO's vGPU, window base and window size. */
    static SessionAuthenticator checking(TokenVerifier verifier) {
        return (token, window) -> verifier.verify(token, window.tokenWindow());
    }
}
