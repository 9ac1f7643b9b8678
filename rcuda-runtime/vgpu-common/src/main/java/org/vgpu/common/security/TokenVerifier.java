package org.vgpu.common.security;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Objects;

/**
 * Checks session tokens (a GPU worker's side): the token must be signed with the site key, name
 * this worker and the vGPU and window the session asks for, and not have expired.
 */
public final class TokenVerifier {
    /**
     * How far the worker's clock may be behind the tracker's. Kept small because it extends the
     * life of every token; NTP keeps cluster clocks well within it.
     */
    public static final Duration CLOCK_SKEW_ALLOWANCE = Duration.ofSeconds(30);

    private final SiteKey key;
    private final String workerId;
    private final Clock clock;

    public TokenVerifier(SiteKey key, String workerId, Clock clock) {
        this.key = Objects.requireNonNull(key, "key");
        SessionToken.requireId("worker id", workerId);
        this.workerId = workerId;
        this.clock = Objects.requireNonNull(clock, "clock");
    }

    /**
     * What the token grants for vGPU {@code vgpuIndex} in its {@linkplain SessionToken.Window#standard standard
     * window}: how the tracker checks the proofs of holder jobs' workers, which it issued so.
     *
     * @throws org.vgpu.common.error.AuthException as {@link #verify(String, SessionToken.Window)}
     */
    public SessionToken verify(String token, int vgpuIndex) {
        return verify(token, SessionToken.Window.standard(vgpuIndex));
    }

    /**
     * What the token grants, once every check passed.
     *
     * @param asked the vGPU and window the session asks to open
     * @throws org.vgpu.common.error.AuthException with the reason: no or malformed token, signature mismatch, issued
     *         for another worker, another vGPU or another window of it, expired
     */
    public SessionToken verify(String token, SessionToken.Window asked) {
        SessionToken granted = SessionTokenCodec.decode(token, key);
        if (!granted.workerId().equals(workerId)) {
            throw SessionTokenCodec.refused("session token of job " + granted.jobId() + " was issued for worker "
                    + granted.workerId() + ", this is worker " + workerId);
        }
        if (granted.vgpuIndex() != asked.vgpuIndex()) {
            throw SessionTokenCodec.refused("session token of job " + granted.jobId() + " was issued for vGPU "
                    + granted.vgpuIndex() + ", the session asks for vGPU " + asked.vgpuIndex());
        }
        if (!granted.window().equals(asked)) {
            throw SessionTokenCodec.refused("session token of job " + granted.jobId() + " was issued for "
                    + granted.window() + ", the session asks for " + asked);
        }
        Instant now = clock.instant();
        if (now.minus(CLOCK_SKEW_ALLOWANCE).isAfter(granted.expiresAt())) {
            throw SessionTokenCodec.refused("session token of job " + granted.jobId() + " expired at "
                    + granted.expiresAt() + " (now " + now + ", clock skew allowance "
                    + CLOCK_SKEW_ALLOWANCE.toSeconds()
                    + " s)");
        }
        return granted;
    }
}
