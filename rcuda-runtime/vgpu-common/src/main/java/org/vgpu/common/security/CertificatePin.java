package org.vgpu.common.security;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.cert.CertificateEncodingException;
import java.security.cert.X509Certificate;
import java.util.Arrays;
import java.util.HexFormat;

import org.vgpu.common.error.InputException;

/**
 * The SHA-256 fingerprint of a GPU worker's TLS certificate (of its DER encoding, as {@code openssl x509
 * -fingerprint -sha256} prints it): what a session token carries so that the job's client accepts that certificate
 * and no other. A holder's worker makes a fresh self-signed certificate at start and proves its fingerprint to the
 * tracker with the site key; the tracker puts it into the job's tokens for that worker.
 */
public final class CertificatePin {
    /** SHA-256's size. */
    public static final int BYTES = 32;

    private static final HexFormat COLON_HEX = HexFormat.ofDelimiter(":").withUpperCase();

    private final byte[] sha256;

    private CertificatePin(byte[] sha256) {
        this.sha256 = sha256;
    }

    /**
     * @throws InputException when {@code sha256} is not {@value #BYTES} bytes
     */
    public static CertificatePin ofDigest(byte[] sha256) {
        if (sha256 == null || sha256.length != BYTES) {
            throw new InputException("a certificate fingerprint is " + BYTES + " bytes of SHA-256, got "
                    + (sha256 == null ? "none" : sha256.length + " bytes"));
        }
        return new CertificatePin(sha256.clone());
    }

    /** The fingerprint of {@code certificate}. */
    public static CertificatePin of(X509Certificate certificate) {
        try {
            return new CertificatePin(MessageDigest.getInstance("SHA-256").digest(certificate.getEncoded()));
        } catch (CertificateEncodingException e) {
            throw new IllegalArgumentException("a certificate that has no DER encoding cannot be pinned", e);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java runtime has SHA-256", e);
        }
    }

    /** Whether {@code certificate} is the pinned one (compared in constant time). */
    public boolean matches(X509Certificate certificate) {
        return MessageDigest.isEqual(sha256, of(certificate).sha256);
    }

    /** The 32 bytes. */
    public byte[] digest() {
        return sha256.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof CertificatePin pin && MessageDigest.isEqual(sha256, pin.sha256);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(sha256);
    }

    /** {@code SHA-256 AB:CD:...}: not secret, and what an admin compares with openssl's output. */
    @Override
    public String toString() {
        return "SHA-256 " + COLON_HEX.formatHex(sha256);
    }
}
