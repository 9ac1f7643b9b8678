package org.vgpu.common.security;

import java.time.Instant;
import java.util.Objects;

import org.vgpu.common.VgpuLimits;
import org.vgpu.common.error.InputException;

/**
 * What a session token grants: job {@code jobId} may use vGPU {@code vgpuIndex} on the GPU worker
 * {@code workerId} until {@code expiresAt}. {@link TokenIssuer} signs it, {@link TokenVerifier}
 * checks it.
 *
 * <p>Ids are 1 to {@value #MAX_ID_LENGTH} visible ASCII characters without spaces: they end up in
 * line protocols and log lines, where spaces or control characters could forge fields.
 */
public record SessionToken(String jobId, int vgpuIndex, String workerId, Instant expiresAt) {
    public static final int MAX_ID_LENGTH = 128;

    public SessionToken {
        requireId("job id", jobId);
        requireId("worker id", workerId);
        if (vgpuIndex < 0 || vgpuIndex >= VgpuLimits.MAX_VGPUS) {
            throw new InputException("vGPU index must be in [0, " + VgpuLimits.MAX_VGPUS + "), got " + vgpuIndex);
        }
        Objects.requireNonNull(expiresAt, "expiresAt");
    }

    /**
     * Whether {@code id} is acceptable as a job or worker id.
     *
     * @throws InputException saying why not
     */
    public static void requireId(String what, String id) {
        if (id == null || id.isEmpty() || id.length() > MAX_ID_LENGTH) {
            throw new InputException(what + " must have 1 to " + MAX_ID_LENGTH + " characters, got "
                    + (id == null ? "none" : id.length()));
        }
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (c <= ' ' || c > '~') {
                throw new InputException(what
                        + " must be visible ASCII without spaces, got character 0x" + Integer.toHexString(c)
                        + " at position " + i);
            }
        }
    }
}
