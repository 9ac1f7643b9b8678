package org.vgpu.common.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.common.error.AuthException;

/**
 * A request line signed with the site key, for a socket that only holders of the key may use (the lender's
 * control socket): {@code REQUEST expires=UNIX-SECONDS nonce=RANDOM-HEX mac=HEX}, where {@code HEX} is the lower-case
 * hex HMAC-SHA256, under the site key, of {@code PURPOSE + "\n" + REQUEST + " expires=" + UNIX-SECONDS + " nonce="
 * + RANDOM-HEX}. The purpose word keeps a request signed for one socket from being accepted by another; the expiry
 * and {@link Verifier}'s memory of the signatures it accepted keep a request seen on the wire from being sent again,
 * and the nonce (16 to 64 hex digits) lets the same request be sent twice in one second.
 *
 * <p>A shell signs one with openssl: {@code printf '%s\n%s expires=%s nonce=%s' PURPOSE "$request" "$expires" "$nonce" | openssl
 * dgst -sha256 -mac HMAC -macopt hexkey:$(base64 -d KEY-FILE | od -An -tx1 | tr -d ' \n')}.
 */
public final class SignedRequest {
    /** The longest a signature may live: long enough for one request, short enough that a seen one is soon useless. */
    public static final Duration MAX_LIFETIME = Duration.ofSeconds(60);

    /** Signatures remembered against replay; more distinct requests within {@link #MAX_LIFETIME} are refused. */
    static final int MAX_REMEMBERED = 4096;

    private static final Pattern SIGNED =
            Pattern.compile("((.+) expires=([0-9]{1,12}) nonce=[0-9a-f]{16,64}) mac=([0-9a-f]{64})");
    private static final SecureRandom NONCES = new SecureRandom();

    private SignedRequest() {}

    /** {@code request} with its expiry, a fresh nonce and the signature appended. */
    public static String sign(SiteKey key, String purpose, String request, Instant expires) {
        byte[] nonce = new byte[8];
        NONCES.nextBytes(nonce);
        String signed = request + " expires=" + expires.getEpochSecond() + " nonce="
                + HexFormat.of().formatHex(nonce);
        return signed + " mac=" + HexFormat.of().formatHex(mac(key, purpose, signed));
    }

    private static byte[] mac(SiteKey key, String purpose, String signed) {
        return key.mac((purpose + "\n" + signed).getBytes(StandardCharsets.US_ASCII));
    }

    /** Checks signed requests for one purpose and remembers the signatures it accepted until they expire. */
    public static final class Verifier {
        private final SiteKey key;
        private final String purpose;
        private final Clock clock;
        /** Accepted signatures and when each expires, oldest first. */
        private final Map<String, Long> accepted = new LinkedHashMap<>();

        public Verifier(SiteKey key, String purpose, Clock clock) {
            this.key = Objects.requireNonNull(key, "key");
            this.purpose = Objects.requireNonNull(purpose, "purpose");
            this.clock = Objects.requireNonNull(clock, "clock");
        }

        /**
         * The request without its signature, once the signature matches, has not expired, expires no later than
         * {@link #MAX_LIFETIME} plus {@link TokenVerifier#CLOCK_SKEW_ALLOWANCE} from now, and was not accepted before.
         *
         * @throws AuthException saying which check failed
         */
        public synchronized String verify(String line) {
            Matcher signed = SIGNED.matcher(line);
            if (!signed.matches()) {
                throw new AuthException("the request is not signed with the site key (REQUEST expires=UNIX-SECONDS"
                        + " nonce=HEX mac=HMAC-SHA256-HEX)");
            }
            String request = signed.group(2);
            long expires = Long.parseLong(signed.group(3));
            String signature = signed.group(4);
            if (!MessageDigest.isEqual(
                    mac(key, purpose, signed.group(1)), HexFormat.of().parseHex(signature))) {
                throw new AuthException("the request's signature does not match (signed with another key, or altered)");
            }
            long now = clock.instant().getEpochSecond();
            long skew = TokenVerifier.CLOCK_SKEW_ALLOWANCE.toSeconds();
            if (expires < now - skew) {
                throw new AuthException("the request's signature expired at " + Instant.ofEpochSecond(expires)
                        + " (now " + Instant.ofEpochSecond(now) + ")");
            }
            if (expires > now + MAX_LIFETIME.toSeconds() + skew) {
                throw new AuthException("the request's signature expires more than " + MAX_LIFETIME.toSeconds()
                        + " s from now (" + Instant.ofEpochSecond(expires) + "); sign each request just before"
                        + " sending it");
            }
            accepted.values().removeIf(until -> until < now - skew);
            if (accepted.containsKey(signature)) {
                throw new AuthException("the request was sent before (a signed request is accepted once)");
            }
            if (accepted.size() >= MAX_REMEMBERED) {
                throw new AuthException("more than " + MAX_REMEMBERED + " signed requests in the last "
                        + MAX_LIFETIME.toSeconds() + " s; try again later");
            }
            accepted.put(signature, expires);
            return request;
        }
    }
}
