package org.vgpu.common.security;

import java.time.Clock;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.error.InputException;

/**
 * Signs session tokens (the tracker's side). A token is a bearer credential: whoever holds it may
 * open the session it names until it expires, so hand it only to the job and never log it.
 */
public final class TokenIssuer {
    private final SiteKey key;
    private final Clock clock;

    public TokenIssuer(SiteKey key, Clock clock) {
        this.key = Objects.requireNonNull(key, "key");
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /**
     * A token that lets job {@code jobId} open vGPU {@code vgpuIndex} in its {@linkplain SessionToken.Window#standard
     * standard window} on worker {@code workerId} for {@code ttl} from now: what the tracker issues, since it names no
     * other window base to the SPANK bridge.
     *
     * @throws InputException for an id {@link SessionToken} does not accept,
     *         an index out of range, or a ttl that is not positive
     */
    public String issue(String jobId, int vgpuIndex, String workerId, Duration ttl) {
        return issue(jobId, SessionToken.Window.standard(vgpuIndex), workerId, Optional.empty(), ttl);
    }

    /**
     * As {@link #issue(String, int, String, Duration)}, pinning the worker's TLS certificate when {@code
     * workerCertificate} names one: the job's client then speaks TLS with the worker and accepts that certificate only.
     */
    public String issue(
            String jobId, int vgpuIndex, String workerId, Optional<CertificatePin> workerCertificate, Duration ttl) {
        return issue(jobId, SessionToken.Window.standard(vgpuIndex), workerId, workerCertificate, ttl);
    }

    /**
     * A token that lets job {@code jobId} open {@code window} (its vGPU at exactly that base and size) on worker
     * {@code workerId} for {@code ttl} from now.
     *
     * @throws InputException for an id {@link SessionToken} does not accept, or a ttl that is not positive
     */
    public String issue(String jobId, SessionToken.Window window, String workerId, Duration ttl) {
        return issue(jobId, window, workerId, Optional.empty(), ttl);
    }

    /** As {@link #issue(String, SessionToken.Window, String, Duration)}, pinning {@code workerCertificate} if any. */
    public String issue(
            String jobId,
            SessionToken.Window window,
            String workerId,
            Optional<CertificatePin> workerCertificate,
            Duration ttl) {
        if (ttl == null || ttl.isNegative() || ttl.isZero()) {
            throw new InputException("a token's time to live must be positive, got " + ttl);
        }
        Instant expiresAt;
        try {
            expiresAt = clock.instant().plus(ttl);
        } catch (DateTimeException | ArithmeticException e) {
            throw new InputException("a token's time to live of " + ttl + " is too long");
        }
        return SessionTokenCodec.encode(new SessionToken(jobId, window, workerId, workerCertificate, expiresAt), key);
    }
}
