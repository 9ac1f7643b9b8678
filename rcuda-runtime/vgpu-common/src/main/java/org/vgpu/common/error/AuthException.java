package org.vgpu.common.error;

/**
 * A session token or credential that is refused: malformed, signed with another key, expired, or
 * for another job, vGPU or worker. A GPU worker sends it to its client as {@code VGPU_AUTH_FAILED}.
 */
public final class AuthException extends VgpuFailure {
    private static final long serialVersionUID = 1L;

    public AuthException(String message) {
        super("AUTH_FAILED", message, null);
    }
}
