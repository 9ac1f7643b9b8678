package org.vgpu.common.security;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.time.DateTimeException;
import java.time.Instant;
import java.util.Base64;
import java.util.Optional;

import org.vgpu.common.contract.BridgeContract;
import org.vgpu.common.error.AuthException;
import org.vgpu.common.error.InputException;

/**
 * The token's text form, shared by {@link TokenIssuer} and {@link TokenVerifier}:
 * {@code v3.<payload>.<mac>}, both parts base64url without padding. (Version 1 had no window, version 2 no worker
 * certificate; their tokens are refused as another format version.)
 *
 * <p>The payload is a canonical binary encoding in which every field has a fixed size or a length
 * prefix, so no two different tokens encode to the same bytes (with plain concatenation, job "a"
 * on worker "bc" would sign the same bytes as job "ab" on worker "c"):
 * <pre>
 *   int32 job id length, job id (ASCII) | int32 vGPU index | int64 window base | int64 window size
 *   int32 worker id length, worker id (ASCII) | int32 certificate pin length (0 or 32), its SHA-256
 *   | int64 expiry epoch second | int32 expiry nanosecond
 * </pre>
 * all big-endian. The MAC is HMAC-SHA256 over {@link #MAC_DOMAIN} followed by the payload; the
 * domain prefix keeps a token MAC from ever equalling a MAC the site key makes for another purpose.
 * Decoding accepts only the canonical text (it re-encodes and compares), so no two strings are
 * the same valid token: changing any character of a token makes it invalid.
 */
final class SessionTokenCodec {
    static final String VERSION = "v3";
    /**
     * Comfortably above the longest valid token (two ids of 128 characters and a pin give ~490), and what the
     * SPANK bridge passes on to a job.
     */
    static final int MAX_TOKEN_LENGTH = BridgeContract.TOKEN_BYTES;

    private static final byte[] MAC_DOMAIN = "vgpu session token v3\0".getBytes(StandardCharsets.US_ASCII);
    private static final Base64.Encoder ENCODER = Base64.getUrlEncoder().withoutPadding();
    private static final Base64.Decoder DECODER = Base64.getUrlDecoder();

    private SessionTokenCodec() {}

    static String encode(SessionToken token, SiteKey key) {
        byte[] jobId = token.jobId().getBytes(StandardCharsets.US_ASCII);
        byte[] workerId = token.workerId().getBytes(StandardCharsets.US_ASCII);
        byte[] pin = token.workerCertificate().map(CertificatePin::digest).orElse(new byte[0]);
        Instant expiresAt = token.expiresAt();
        ByteBuffer payload = ByteBuffer.allocate(
                        4 + jobId.length + 4 + 8 + 8 + 4 + workerId.length + 4 + pin.length + 8 + 4)
                .putInt(jobId.length)
                .put(jobId)
                .putInt(token.window().vgpuIndex())
                .putLong(token.window().base())
                .putLong(token.window().size())
                .putInt(workerId.length)
                .put(workerId)
                .putInt(pin.length)
                .put(pin)
                .putLong(expiresAt.getEpochSecond())
                .putInt(expiresAt.getNano());
        byte[] payloadBytes = payload.array();
        return VERSION + "." + ENCODER.encodeToString(payloadBytes) + "."
                + ENCODER.encodeToString(mac(key, payloadBytes));
    }

    /**
     * The token's content once its MAC checked out.
     *
     * @throws AuthException when the text is not a token or its MAC is wrong
     */
    static SessionToken decode(String text, SiteKey key) {
        String[] parts = split(text);
        byte[] payload = canonicalBase64(parts[1], "payload");
        byte[] presentedMac = canonicalBase64(parts[2], "MAC");
        if (!MessageDigest.isEqual(mac(key, payload), presentedMac)) {
            throw refused("session token signature does not match: it was altered or signed with another site key");
        }
        return parsePayload(payload);
    }

    /**
     * The token's content, its MAC not checked: for a client, which has no site key, to read what it is granted.
     *
     * @throws AuthException when the text is not a token
     */
    static SessionToken decodeUnverified(String text) {
        String[] parts = split(text);
        canonicalBase64(parts[2], "MAC");
        return parsePayload(canonicalBase64(parts[1], "payload"));
    }

    private static String[] split(String text) {
        if (text == null || text.isEmpty()) {
            throw refused("no session token was presented");
        }
        if (text.length() > MAX_TOKEN_LENGTH) {
            throw refused("malformed session token: " + text.length() + " characters, at most " + MAX_TOKEN_LENGTH);
        }
        String[] parts = text.split("\\.", -1);
        if (parts.length != 3) {
            throw refused("malformed session token: expected " + VERSION + ".<payload>.<mac>");
        }
        if (!parts[0].equals(VERSION)) {
            throw refused("malformed session token: unsupported format version (this vgpu reads " + VERSION + ")");
        }
        return parts;
    }

    private static byte[] canonicalBase64(String part, String what) {
        byte[] bytes;
        try {
            bytes = DECODER.decode(part);
        } catch (IllegalArgumentException e) {
            throw refused("malformed session token: its " + what + " is not base64url");
        }
        if (!ENCODER.encodeToString(bytes).equals(part)) {
            throw refused("malformed session token: its " + what + " is not canonical unpadded base64url");
        }
        return bytes;
    }

    private static SessionToken parsePayload(byte[] payload) {
        try {
            ByteBuffer in = ByteBuffer.wrap(payload);
            String jobId = readId(in);
            SessionToken.Window window = new SessionToken.Window(in.getInt(), in.getLong(), in.getLong());
            String workerId = readId(in);
            Optional<CertificatePin> pin = readPin(in);
            long expirySecond = in.getLong();
            int expiryNano = in.getInt();
            if (expiryNano < 0 || expiryNano > 999_999_999) {
                throw refused("malformed session token: out-of-range expiry nanosecond " + expiryNano);
            }
            Instant expiresAt = Instant.ofEpochSecond(expirySecond, expiryNano);
            if (in.hasRemaining()) {
                throw refused("malformed session token: " + in.remaining() + " unexpected trailing bytes");
            }
            return new SessionToken(jobId, window, workerId, pin, expiresAt);
        } catch (BufferUnderflowException | DateTimeException e) {
            throw refused("malformed session token: truncated or out-of-range payload");
        } catch (InputException e) {
            throw refused("malformed session token: " + e.getMessage());
        }
    }

    private static String readId(ByteBuffer in) {
        int length = in.getInt();
        if (length < 0 || length > in.remaining()) {
            throw refused("malformed session token: an id length of " + length + " does not fit the payload");
        }
        byte[] bytes = new byte[length];
        in.get(bytes);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    private static Optional<CertificatePin> readPin(ByteBuffer in) {
        int length = in.getInt();
        if (length == 0) {
            return Optional.empty();
        }
        if (length != CertificatePin.BYTES || length > in.remaining()) {
            throw refused("malformed session token: a certificate pin of " + length + " bytes (SHA-256 has "
                    + CertificatePin.BYTES + ")");
        }
        byte[] digest = new byte[length];
        in.get(digest);
        return Optional.of(CertificatePin.ofDigest(digest));
    }

    private static byte[] mac(SiteKey key, byte[] payload) {
        byte[] input = new byte[MAC_DOMAIN.length + payload.length];
        System.arraycopy(MAC_DOMAIN, 0, input, 0, MAC_DOMAIN.length);
        System.arraycopy(payload, 0, input, MAC_DOMAIN.length, payload.length);
        return key.mac(input);
    }

    static AuthException refused(String reason) {
        return new AuthException(reason);
    }
}
