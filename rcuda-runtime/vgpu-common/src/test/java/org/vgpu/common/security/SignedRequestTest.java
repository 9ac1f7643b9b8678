package org.vgpu.common.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import org.vgpu.common.error.AuthException;

/** Signed request lines (the lender's control socket): what is accepted, what is refused and why. */
class SignedRequestTest {
    private static final Instant NOW = Instant.parse("2033-05-18T03:33:00Z");
    private static final Clock CLOCK = Clock.fixed(NOW, ZoneOffset.UTC);

    @TempDir
    Path dir;

    private final SiteKey key = SiteKey.generate();

    @Test
    void aSignedRequestIsAcceptedOnceAndTheSameRequestSignedAgainIsAcceptedToo() {
        SignedRequest.Verifier verifier = new SignedRequest.Verifier(key, "test", CLOCK);
        String first = SignedRequest.sign(key, "test", "open 0", NOW.plusSeconds(30));
        String second = SignedRequest.sign(key, "test", "open 0", NOW.plusSeconds(30));
        assertNotEquals(first, second, "each signature has its own nonce");

        assertEquals("open 0", verifier.verify(first));
        assertEquals("open 0", verifier.verify(second));
        assertEquals(
                "the request was sent before (a signed request is accepted once)",
                assertThrows(AuthException.class, () -> verifier.verify(first)).detail());
    }

    @Test
    void aRequestSignedForAnotherPurposeOrWithAnotherKeyOrTooLongAheadIsRefused() {
        SignedRequest.Verifier verifier = new SignedRequest.Verifier(key, "test", CLOCK);
        for (String line : new String[] {
            SignedRequest.sign(key, "other", "status", NOW.plusSeconds(30)),
            SignedRequest.sign(SiteKey.generate(), "test", "status", NOW.plusSeconds(30)),
            SignedRequest.sign(key, "test", "status", NOW.plusSeconds(30)).replace("status", "statuS"),
        }) {
            assertEquals(
                    "the request's signature does not match (signed with another key, or altered)",
                    assertThrows(AuthException.class, () -> verifier.verify(line))
                            .detail());
        }
        assertTrue(assertThrows(
                        AuthException.class,
                        () -> verifier.verify(SignedRequest.sign(key, "test", "status", NOW.plusSeconds(3600))))
                .detail()
                .startsWith("the request's signature expires more than 60 s from now"));
        assertTrue(assertThrows(
                        AuthException.class,
                        () -> verifier.verify(SignedRequest.sign(key, "test", "status", NOW.minusSeconds(31))))
                .detail()
                .startsWith("the request's signature expired at"));
        assertEquals(
                "the request is not signed with the site key (REQUEST expires=UNIX-SECONDS nonce=HEX"
                        + " mac=HMAC-SHA256-HEX)",
                assertThrows(AuthException.class, () -> verifier.verify("status"))
                        .detail());
    }

    @Test
    void theSignaturesRememberedAgainstReplayAreBounded() {
        Instant[] now = {NOW};
        Clock movingClock = new Clock() {
            @Override
            public ZoneOffset getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(java.time.ZoneId zone) {
                throw new UnsupportedOperationException();
            }

            @Override
            public Instant instant() {
                return now[0];
            }
        };
        SignedRequest.Verifier verifier = new SignedRequest.Verifier(key, "test", movingClock);
        for (int i = 0; i < SignedRequest.MAX_REMEMBERED; i++) {
            verifier.verify(SignedRequest.sign(key, "test", "status", NOW.plusSeconds(10)));
        }
        assertTrue(assertThrows(
                        AuthException.class,
                        () -> verifier.verify(SignedRequest.sign(key, "test", "status", NOW.plusSeconds(10))))
                .detail()
                .startsWith("more than 4096 signed requests in the last 60 s"));

        now[0] = NOW.plusSeconds(41); // the remembered ones expired (with the clock skew allowance): room again
        assertEquals("status", verifier.verify(SignedRequest.sign(key, "test", "status", now[0].plusSeconds(10))));
    }

    /** The line README's openssl command makes (computed outside Java) is accepted: the documented format holds. */
    @Test
    void aLineSignedAsTheShellDoesIsAccepted() throws IOException {
        Path keyFile = dir.resolve("site.key");
        Files.writeString(keyFile, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n");
        Files.setPosixFilePermissions(keyFile, PosixFilePermissions.fromString("rw-------"));
        SignedRequest.Verifier verifier = new SignedRequest.Verifier(
                SiteKey.load(keyFile),
                "vgpu-lender-control",
                Clock.fixed(Instant.ofEpochSecond(1999999990), ZoneOffset.UTC));
        assertEquals(
                "open 0",
                verifier.verify("open 0 expires=2000000000 nonce=0123456789abcdef"
                        + " mac=fa9039e1699e96799a66ecc0825ffb9898ed66f68d6f6911989a4ae3928dfba8"));
    }
}
