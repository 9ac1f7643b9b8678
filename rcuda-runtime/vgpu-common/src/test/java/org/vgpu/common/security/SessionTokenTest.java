package org.vgpu.common.security;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Base64;
import java.util.Optional;
import java.util.Random;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.vgpu.common.VgpuLimits;
import org.vgpu.common.error.AuthException;
import org.vgpu.common.error.InputException;

/** {@link TokenIssuer} and {@link TokenVerifier}: the round trip and every way a token is refused. */
class SessionTokenTest {
    private static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
    private static final String WORKER = "node7-d1-4f2a9c01";
    private static final String ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.";

    private final SiteKey key = SiteKey.generate();
    private final TokenIssuer issuer = new TokenIssuer(key, Clock.fixed(NOW, ZoneOffset.UTC));
    private final TokenVerifier verifier = verifierAt(NOW);

    @Test
    void anIssuedTokenVerifiesToWhatWasIssued() {
        String token = issuer.issue("4711_3", 2, WORKER, Duration.ofMinutes(10));

        assertTrue(token.startsWith("v3."), token);
        assertEquals(
                new SessionToken("4711_3", SessionToken.Window.standard(2), WORKER, NOW.plus(Duration.ofMinutes(10))),
                verifier.verify(token, 2));
    }

    @Test
    void aPinnedCertificateTravelsInTheTokenAndAClientReadsItWithoutTheKey() {
        CertificatePin pin = CertificatePin.ofDigest(new byte[] {
            1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
            30, 31, 32
        });
        String pinned = issuer.issue("42", 1, WORKER, Optional.of(pin), Duration.ofMinutes(10));
        String plain = issuer.issue("42", 1, WORKER, Duration.ofMinutes(10));

        assertEquals(Optional.of(pin), verifier.verify(pinned, 1).workerCertificate());
        assertEquals(Optional.of(pin), SessionToken.pinnedCertificate(pinned));
        assertEquals(Optional.empty(), SessionToken.pinnedCertificate(plain));
        assertTrue(pin.toString().startsWith("SHA-256 01:02:03:"), pin.toString());
        // the pin is signed: a token whose pin was swapped for another is refused by the worker
        String swapped = issuer.issue(
                "42", 1, WORKER, Optional.of(CertificatePin.ofDigest(new byte[32])), Duration.ofMinutes(10));
        String forged = swapped.substring(0, swapped.lastIndexOf('.')) + pinned.substring(pinned.lastIndexOf('.'));
        assertTrue(refusal(() -> verifier.verify(forged, 1)).contains("signature does not match"));
        assertThrows(AuthException.class, () -> SessionToken.pinnedCertificate("v3.not-a-token"));
        assertInvalid(() -> CertificatePin.ofDigest(new byte[20]));
    }

    @Test
    void aTokenHoldsItsFieldsExactlyAtTheirLongest() {
        String longJob = "j".repeat(SessionToken.MAX_ID_LENGTH);
        String longWorker = "w".repeat(SessionToken.MAX_ID_LENGTH);
        Duration ttl = Duration.ofDays(3).plusNanos(123_456_789);
        CertificatePin pin = CertificatePin.ofDigest(new byte[CertificatePin.BYTES]);
        String token = issuer.issue(longJob, VgpuLimits.MAX_VGPUS - 1, longWorker, Optional.of(pin), ttl);

        assertTrue(token.length() <= SessionTokenCodec.MAX_TOKEN_LENGTH, token);
        SessionToken granted = new TokenVerifier(key, longWorker, Clock.fixed(NOW, ZoneOffset.UTC))
                .verify(token, VgpuLimits.MAX_VGPUS - 1);
        assertEquals(
                new SessionToken(
                        longJob,
                        SessionToken.Window.standard(VgpuLimits.MAX_VGPUS - 1),
                        longWorker,
                        Optional.of(pin),
                        NOW.plus(ttl)),
                granted);
    }

    @Test
    void anExpiredTokenIsRefusedSayingWhenItExpired() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofSeconds(60));
        Instant later =
                NOW.plusSeconds(60).plus(TokenVerifier.CLOCK_SKEW_ALLOWANCE).plusSeconds(1);

        String reason = refusal(() -> verifierAt(later).verify(token, 0));
        assertTrue(reason.contains("session token of job 42 expired at 2026-03-01T12:01:00Z"), reason);
        assertTrue(reason.contains("now " + later), reason);
    }

    @Test
    void aTokenIsAcceptedWithinTheClockSkewAllowance() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofSeconds(60));
        Instant edge = NOW.plusSeconds(60).plus(TokenVerifier.CLOCK_SKEW_ALLOWANCE);
        assertEquals("42", verifierAt(edge).verify(token, 0).jobId());
    }

    @Test
    void aTokenForAnotherWorkerIsRefusedNamingBoth() {
        String token = issuer.issue("42", 0, "node2-d0-aa", Duration.ofMinutes(1));
        String reason = refusal(() -> verifier.verify(token, 0));
        assertTrue(reason.contains("issued for worker node2-d0-aa, this is worker " + WORKER), reason);
    }

    @Test
    void aTokenForAnotherVgpuIsRefused() {
        String token = issuer.issue("42", 1, WORKER, Duration.ofMinutes(1));
        String reason = refusal(() -> verifier.verify(token, 3));
        assertTrue(reason.contains("issued for vGPU 1, the session asks for vGPU 3"), reason);
    }

    /** The window is part of the grant: the same vGPU index at another base, or with another size, is refused. */
    @Test
    void aTokenForOneWindowIsRefusedForAnotherWindowOfTheSameVgpuNamingBoth() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofMinutes(1));
        SessionToken.Window granted = SessionToken.Window.standard(0);
        SessionToken.Window fifth = SessionToken.Window.standard(5);

        SessionToken.Window elsewhere = new SessionToken.Window(0, fifth.base(), fifth.size());
        assertEquals(
                "session token of job 42 was issued for vGPU 0 window [0x100000000000, 0x104000000000), the session"
                        + " asks for vGPU 0 window [0x114000000000, 0x118000000000)",
                refusal(() -> verifier.verify(token, elsewhere)));
        String wider =
                refusal(() -> verifier.verify(token, new SessionToken.Window(0, granted.base(), 2 * granted.size())));
        assertTrue(wider.endsWith("the session asks for vGPU 0 window [0x100000000000, 0x108000000000)"), wider);

        assertEquals("42", verifier.verify(token, granted).jobId());
    }

    @Test
    void aTokenForAnExplicitWindowVerifiesForExactlyThatWindow() {
        SessionToken.Window window = new SessionToken.Window(3, 0x2000_0000_0000L, 1L << 30);
        String token = issuer.issue("42", window, WORKER, Duration.ofMinutes(1));

        assertEquals(window, verifier.verify(token, window).window());
        String reason = refusal(() -> verifier.verify(token, 3));
        assertTrue(reason.contains("was issued for vGPU 3 window [0x200000000000, 0x200040000000)"), reason);
    }

    @Test
    void aWindowThatIsEmptyOrWrapsIsInvalid() {
        assertInvalid(() -> new SessionToken.Window(0, 0x1000_0000_0000L, 0));
        assertInvalid(() -> new SessionToken.Window(0, 0, 1L << 30));
        assertInvalid(() -> new SessionToken.Window(0, Long.MAX_VALUE - 10, 1L << 30));
        assertInvalid(() -> SessionToken.Window.standard(VgpuLimits.MAX_VGPUS));
    }

    @Test
    void aTokenSignedWithAnotherKeyIsRefused() {
        String token = new TokenIssuer(SiteKey.generate(), Clock.fixed(NOW, ZoneOffset.UTC))
                .issue("42", 0, WORKER, Duration.ofMinutes(1));
        assertTrue(refusal(() -> verifier.verify(token, 0)).contains("signature does not match"));
    }

    @Test
    void changingAnyCharacterOfATokenInvalidatesIt() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofMinutes(1));
        for (int i = 0; i < token.length(); i++) {
            for (int r = 0; r < ALPHABET.length(); r++) {
                char replacement = ALPHABET.charAt(r);
                if (replacement != token.charAt(i)) {
                    String tampered = token.substring(0, i) + replacement + token.substring(i + 1);
                    refusal(() -> verifier.verify(tampered, 0));
                }
            }
        }
    }

    @Test
    void flippingAnyBitOfThePayloadBreaksTheSignature() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofMinutes(1));
        String[] parts = token.split("\\.");
        byte[] payload = Base64.getUrlDecoder().decode(parts[1]);
        for (int i = 0; i < payload.length; i++) {
            for (int bit = 0; bit < 8; bit++) {
                byte[] tampered = payload.clone();
                tampered[i] ^= (byte) (1 << bit);
                String forged = parts[0] + "." + base64(tampered) + "." + parts[2];
                String reason = refusal(() -> verifier.verify(forged, 0));
                assertTrue(reason.contains("signature does not match"), reason);
            }
        }
    }

    @Test
    void everyTruncationOrExtensionIsRefused() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofMinutes(1));
        for (int length = 0; length < token.length(); length++) {
            String truncated = token.substring(0, length);
            refusal(() -> verifier.verify(truncated, 0));
        }
        refusal(() -> verifier.verify(token + "A", 0));
        refusal(() -> verifier.verify(token + ".", 0));
        refusal(() -> verifier.verify(" " + token, 0));
    }

    @Test
    void noTokenAndOversizedTokensAreRefused() {
        assertTrue(refusal(() -> verifier.verify(null, 0)).contains("no session token"));
        assertTrue(refusal(() -> verifier.verify("", 0)).contains("no session token"));
        assertTrue(refusal(() -> verifier.verify("v1." + "A".repeat(5000) + ".AA", 0))
                .contains("at most 1024"));
    }

    @Test
    void anotherFormatVersionIsRefused() {
        String token = issuer.issue("42", 0, WORKER, Duration.ofMinutes(1));
        assertTrue(refusal(() -> verifier.verify("v1" + token.substring(2), 0)).contains("unsupported format version"));
        assertTrue(refusal(() -> verifier.verify("v2" + token.substring(2), 0)).contains("unsupported format version"));
        assertTrue(refusal(() -> verifier.verify("v4" + token.substring(2), 0)).contains("unsupported format version"));
    }

    /** Payloads a buggy or compromised issuer could sign: the MAC is right, the content is not a token. */
    @Test
    void correctlySignedPayloadsThatAreNotTokensAreRefused() {
        byte[] job = "42".getBytes(StandardCharsets.US_ASCII);
        byte[] worker = WORKER.getBytes(StandardCharsets.US_ASCII);
        SessionToken.Window window = SessionToken.Window.standard(0);
        ByteBuffer valid = ByteBuffer.allocate(4 + 2 + 4 + 8 + 8 + 4 + worker.length + 4 + 8 + 4)
                .putInt(2)
                .put(job)
                .putInt(0)
                .putLong(window.base())
                .putLong(window.size())
                .putInt(worker.length)
                .put(worker)
                .putInt(0)
                .putLong(NOW.getEpochSecond())
                .putInt(0);
        assertEquals("42", verifier.verify(signed(valid.array()), 0).jobId());

        byte[] shortPin = valid.array().clone();
        ByteBuffer.wrap(shortPin).putInt(4 + 2 + 4 + 8 + 8 + 4 + worker.length, 16);
        assertTrue(refusal(() -> verifier.verify(signed(shortPin), 0)).contains("certificate pin of 16 bytes"));

        byte[] trailing =
                ByteBuffer.allocate(valid.capacity() + 1).put(valid.array()).array();
        assertTrue(refusal(() -> verifier.verify(signed(trailing), 0)).contains("trailing"));

        byte[] truncated = java.util.Arrays.copyOf(valid.array(), valid.capacity() - 3);
        assertTrue(refusal(() -> verifier.verify(signed(truncated), 0)).contains("truncated"));

        byte[] negativeLength = valid.array().clone();
        ByteBuffer.wrap(negativeLength).putInt(0, -5);
        assertTrue(refusal(() -> verifier.verify(signed(negativeLength), 0)).contains("id length of -5"));

        byte[] spaceInJob = valid.array().clone();
        spaceInJob[4] = ' ';
        assertTrue(refusal(() -> verifier.verify(signed(spaceInJob), 0)).contains("visible ASCII"));

        byte[] emptyWindow = valid.array().clone();
        ByteBuffer.wrap(emptyWindow).putLong(4 + 2 + 4 + 8, 0);
        assertTrue(refusal(() -> verifier.verify(signed(emptyWindow), 0)).contains("non-empty range"));

        byte[] wrappingWindow = valid.array().clone();
        ByteBuffer.wrap(wrappingWindow).putLong(4 + 2 + 4 + 8, Long.MAX_VALUE);
        assertTrue(refusal(() -> verifier.verify(signed(wrappingWindow), 0)).contains("non-empty range"));

        byte[] badNanos = valid.array().clone();
        ByteBuffer.wrap(badNanos).putInt(badNanos.length - 4, -1);
        assertTrue(refusal(() -> verifier.verify(signed(badNanos), 0)).contains("out-of-range"));
    }

    @Test
    void randomStringsAreOnlyEverRefusedAsAuthenticationFailures() {
        Random random = new Random(20260301);
        String token = issuer.issue("42", 0, WORKER, Duration.ofMinutes(1));
        for (int i = 0; i < 20_000; i++) {
            String candidate = switch (i % 4) {
                case 0 -> randomString(random, ALPHABET, random.nextInt(200));
                case 1 -> "v3." + randomString(random, ALPHABET, random.nextInt(120));
                case 2 -> randomUnicode(random, random.nextInt(1200));
                default -> mutate(random, token);
            };
            if (!candidate.equals(token)) {
                refusal(() -> verifier.verify(candidate, 0));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {-1, VgpuLimits.MAX_VGPUS})
    void issuingForAnIndexOutOfRangeIsInvalid(int index) {
        assertInvalid(() -> issuer.issue("42", index, WORKER, Duration.ofMinutes(1)));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "has space", "tab\there", "ünïcode"})
    void issuingForABadIdIsInvalid(String id) {
        assertInvalid(() -> issuer.issue(id, 0, WORKER, Duration.ofMinutes(1)));
        assertInvalid(() -> issuer.issue("42", 0, id, Duration.ofMinutes(1)));
    }

    @Test
    void issuingWithANonPositiveOrEndlessTtlIsInvalid() {
        assertInvalid(() -> issuer.issue("42", 0, WORKER, Duration.ZERO));
        assertInvalid(() -> issuer.issue("42", 0, WORKER, Duration.ofSeconds(-1)));
        assertInvalid(() -> issuer.issue("42", 0, WORKER, null));
        assertInvalid(() -> issuer.issue("42", 0, WORKER, Duration.ofSeconds(Long.MAX_VALUE)));
        assertInvalid(() -> issuer.issue("42", 0, "x".repeat(SessionToken.MAX_ID_LENGTH + 1), Duration.ofMinutes(1)));
    }

    @Test
    void aVerifierNeedsAValidWorkerId() {
        assertInvalid(() -> new TokenVerifier(key, "two words", Clock.systemUTC()));
    }

    private TokenVerifier verifierAt(Instant now) {
        return new TokenVerifier(key, WORKER, Clock.fixed(now, ZoneOffset.UTC));
    }

    private String signed(byte[] payload) {
        byte[] domain = "vgpu session token v3\0".getBytes(StandardCharsets.US_ASCII);
        byte[] input = ByteBuffer.allocate(domain.length + payload.length)
                .put(domain)
                .put(payload)
                .array();
        return "v3." + base64(payload) + "." + base64(key.mac(input));
    }

    private static String base64(byte[] bytes) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    private static String randomString(Random random, String alphabet, int length) {
        StringBuilder text = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            text.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return text.toString();
    }

    private static String randomUnicode(Random random, int length) {
        StringBuilder text = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            text.append((char) random.nextInt(Character.MAX_VALUE + 1));
        }
        return text.toString();
    }

    private static String mutate(Random random, String token) {
        StringBuilder text = new StringBuilder(token);
        int edits = 1 + random.nextInt(4);
        for (int i = 0; i < edits; i++) {
            int position = random.nextInt(text.length());
            switch (random.nextInt(3)) {
                case 0 -> text.setCharAt(position, ALPHABET.charAt(random.nextInt(ALPHABET.length())));
                case 1 -> text.deleteCharAt(position);
                default -> text.insert(position, ALPHABET.charAt(random.nextInt(ALPHABET.length())));
            }
        }
        return text.toString();
    }

    private static String refusal(org.junit.jupiter.api.function.Executable verification) {
        AuthException refused = assertThrows(AuthException.class, verification);
        assertEquals("AUTH_FAILED", refused.codeName(), refused.getMessage());
        assertFalse(refused.getMessage().isBlank());
        return refused.getMessage();
    }

    private static void assertInvalid(org.junit.jupiter.api.function.Executable call) {
        assertEquals("BAD_INPUT", assertThrows(InputException.class, call).codeName());
    }
}
