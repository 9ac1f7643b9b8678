package org.vgpu.runtime.remote.worker;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;

import org.vgpu.runtime.remote.transport.StripedStreams;

/**
 * The stripe keys of a worker's open sessions: a session that takes stripes gets a fresh random key of
 * {@value #KEY_BYTES} bytes, which its WELCOME gives its client over the authenticated connection, and a connection
 * that presents it in a HELLO joining as a stripe is attached to that session's stripes. The key is the only way
 * in: a stripe connection is never checked by the session authenticator, and a key is forgotten as its session
 * ends. Keys are compared in constant time. Thread-safe.
 */
final class StripeJoins {
    static final int KEY_BYTES = 32;
    private static final SecureRandom RANDOM = new SecureRandom();

    private final List<Entry> open = new ArrayList<>();

    private record Entry(byte[] key, StripedStreams stripes) {}

    /** A fresh key for {@code stripes}, as the WELCOME carries it. */
    synchronized String register(StripedStreams stripes) {
        byte[] key = new byte[KEY_BYTES];
        RANDOM.nextBytes(key);
        String text = HexFormat.of().formatHex(key);
        open.add(new Entry(text.getBytes(StandardCharsets.US_ASCII), stripes));
        return text;
    }

    /** The stripes whose key {@code presented} is, if a session open now has it. */
    synchronized Optional<StripedStreams> find(String presented) {
        byte[] candidate = presented.getBytes(StandardCharsets.US_ASCII);
        StripedStreams found = null;
        for (Entry entry : open) {
            // every entry compared, in constant time each: how long this takes says nothing about the key
            if (MessageDigest.isEqual(entry.key(), candidate)) {
                found = entry.stripes();
            }
        }
        return Optional.ofNullable(found);
    }

    /** Forgets the key of {@code stripes}: its session ended. */
    synchronized void forget(StripedStreams stripes) {
        open.removeIf(entry -> entry.stripes() == stripes);
    }
}
