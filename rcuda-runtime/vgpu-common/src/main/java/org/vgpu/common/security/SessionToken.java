package org.vgpu.common.security;

import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.VgpuLimits;
import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.InputException;

/**
 * What a session token grants: job {@code jobId} may use vGPU {@code window.vgpuIndex()} in exactly
 * that address window on the GPU worker {@code workerId} until {@code expiresAt}. {@link TokenIssuer}
 * signs it, {@link TokenVerifier} checks it. The window is part of the grant because a job's vGPUs'
 * windows are disjoint by design: a session that named vGPU 0 but opened vGPU 5's window could take
 * the addresses a migration of vGPU 5 maps there.
 *
 * <p>{@code workerCertificate} pins the worker's TLS certificate: the job's client connects to the worker with TLS and
 * accepts that certificate only ({@link #pinnedCertificate} reads it from a token without the site key). A token
 * without one is for a worker that serves plain TCP ({@code [cluster] worker_tls = off}), or whose certificate the
 * client trusts otherwise.
 *
 * <p>Ids are 1 to {@value #MAX_ID_LENGTH} visible ASCII characters without spaces: they end up in
 * line protocols and log lines, where spaces or control characters could forge fields.
 */
public record SessionToken(
        String jobId, Window window, String workerId, Optional<CertificatePin> workerCertificate, Instant expiresAt) {
    public static final int MAX_ID_LENGTH = 128;

    public SessionToken {
        requireId("job id", jobId);
        Objects.requireNonNull(window, "window");
        requireId("worker id", workerId);
        Objects.requireNonNull(workerCertificate, "workerCertificate");
        Objects.requireNonNull(expiresAt, "expiresAt");
    }

    /** A token that pins no certificate. */
    public SessionToken(String jobId, Window window, String workerId, Instant expiresAt) {
        this(jobId, window, workerId, Optional.empty(), expiresAt);
    }

    /**
     * The worker certificate {@code token} pins, read without checking its signature (the client has no site key; the
     * worker checks the signature, and proves the certificate in the TLS handshake).
     *
     * @throws org.vgpu.common.error.AuthException when the text is not a session token (the text not quoted)
     */
    public static Optional<CertificatePin> pinnedCertificate(String token) {
        return SessionTokenCodec.decodeUnverified(token).workerCertificate();
    }

    /** The vGPU the token is for. */
    public int vgpuIndex() {
        return window.vgpuIndex();
    }

    /**
     * vGPU {@code vgpuIndex}'s address window {@code [base, base + size)}. Only its shape is checked here (an index in
     * range, a non-empty range that does not wrap); the worker checks alignment and the address limit when it opens it.
     */
    public record Window(int vgpuIndex, long base, long size) {
        public Window {
            if (vgpuIndex < 0 || vgpuIndex >= VgpuLimits.MAX_VGPUS) {
                throw new InputException("vGPU index must be in [0, " + VgpuLimits.MAX_VGPUS + "), got " + vgpuIndex);
            }
            if (base <= 0 || size <= 0 || base + size < base) {
                throw new InputException(String.format(
                        "a vGPU's window must be a non-empty range of positive addresses, got 0x%x + 0x%x",
                        base, size));
            }
        }

        /**
         * vGPU {@code vgpuIndex}'s window where the SPANK bridge puts it when the tracker names no {@code window_base}:
         * {@code window_base_default + k * window_bytes}, {@code window_bytes} long. The tracker names none, so this is
         * every tracker-issued token's window.
         */
        public static Window standard(int vgpuIndex) {
            return new Window(
                    vgpuIndex,
                    BridgeContract.WINDOW_BASE_DEFAULT + vgpuIndex * BridgeContract.WINDOW_BYTES,
                    BridgeContract.WINDOW_BYTES);
        }

        /** {@code vGPU K window [0xBASE, 0xEND)}: how refusals and logs name a window. */
        public static String describe(int vgpuIndex, long base, long size) {
            return String.format("vGPU %d window [0x%x, 0x%x)", vgpuIndex, base, base + size);
        }

        @Override
        public String toString() {
            return describe(vgpuIndex, base, size);
        }
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
