package org.vgpu.common.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;

import org.junit.jupiter.api.Test;

import org.vgpu.common.error.AuthException;
import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.InputException;

/**
 * {@link SiteKey#forLend}: a holder's worker checks tokens with the key of its one lend, and that key authenticates no
 * other job's session, nor another vGPU's of the same job.
 */
class LendKeyTest {
    private static final Instant NOW = Instant.parse("2026-11-30T06:00:00Z");
    private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);
    private static final String WORKER = "n2-holder-17";
    private static final Duration TTL = Duration.ofMinutes(10);

    private final SiteKey site = SiteKey.generate();

    @Test
    void aWorkerWithTheLendKeyAcceptsTheTrackersTokenForThatLend() {
        String token = new TokenIssuer(site.forLend("42", 1), CLOCK).issue("42", 1, WORKER, TTL);

        assertEquals("42", worker(site.forLend("42", 1)).verify(token, 1).jobId());
    }

    @Test
    void aWorkerWithOneJobsLendKeyCannotAuthenticateAnotherJobsSession() {
        TokenVerifier lentToJob42 = worker(site.forLend("42", 1));
        // the token the tracker issues job 43 for the same vGPU on a worker of that id, under job 43's lend key
        String job43 = new TokenIssuer(site.forLend("43", 1), CLOCK).issue("43", 1, WORKER, TTL);
        // and one signed with the site key itself, as tokens were before lend keys
        String siteSigned = new TokenIssuer(site, CLOCK).issue("43", 1, WORKER, TTL);

        assertTrue(refusal(() -> lentToJob42.verify(job43, 1)).contains("signature does not match"));
        assertTrue(refusal(() -> lentToJob42.verify(siteSigned, 1)).contains("signature does not match"));
    }

    @Test
    void whatTheBorrowerCanSignWithItsLendKeyNoOtherLendsWorkerAccepts() {
        SiteKey borrowers = site.forLend("42", 1);
        // the borrower, who can read its holder's key, makes a token naming job 43 (or its own job's other vGPU)
        String forged43 = new TokenIssuer(borrowers, CLOCK).issue("43", 1, WORKER, TTL);
        String forgedVgpu2 = new TokenIssuer(borrowers, CLOCK).issue("42", 2, WORKER, TTL);

        assertThrows(AuthException.class, () -> worker(site.forLend("43", 1)).verify(forged43, 1));
        assertThrows(AuthException.class, () -> worker(site.forLend("42", 2)).verify(forgedVgpu2, 2));
        assertThrows(AuthException.class, () -> worker(site).verify(forged43, 1));
    }

    @Test
    void lendKeysAreFixedByTheLendAndDifferFromEachOtherAndTheSiteKey() {
        assertEquals(site.forLend("42", 1).fingerprint(), site.forLend("42", 1).fingerprint());
        assertNotEquals(
                site.forLend("42", 1).fingerprint(), site.forLend("42", 2).fingerprint());
        assertNotEquals(
                site.forLend("42", 1).fingerprint(), site.forLend("421", 1).fingerprint());
        assertNotEquals(site.forLend("42", 1).fingerprint(), site.fingerprint());
        assertNotEquals(
                site.forLend("42", 1).fingerprint(),
                SiteKey.generate().forLend("42", 1).fingerprint());
    }

    @Test
    void aLendKeyTravelsAsBase64AndBadTextIsRefusedWithoutShowingIt() {
        SiteKey lend = site.forLend("42", 1);

        assertEquals(
                lend.fingerprint(),
                SiteKey.fromBase64(lend.base64(), "VGPU_LEND_KEY").fingerprint());
        ConfigException notBase64 =
                assertThrows(ConfigException.class, () -> SiteKey.fromBase64("secret!", "VGPU_LEND_KEY"));
        assertTrue(
                notBase64.getMessage().startsWith("VGPU_LEND_KEY does not hold a key in base64"),
                notBase64.getMessage());
        assertTrue(!notBase64.getMessage().contains("secret"), notBase64.getMessage());
        ConfigException tooShort =
                assertThrows(ConfigException.class, () -> SiteKey.fromBase64("AAAA", "VGPU_LEND_KEY"));
        assertTrue(tooShort.getMessage().contains("3 bytes, at least 32"), tooShort.getMessage());
        assertThrows(InputException.class, () -> site.forLend("4 2", 1));
    }

    private static TokenVerifier worker(SiteKey key) {
        return new TokenVerifier(key, WORKER, CLOCK);
    }

    private static String refusal(Runnable verify) {
        return assertThrows(AuthException.class, verify::run).getMessage();
    }
}
