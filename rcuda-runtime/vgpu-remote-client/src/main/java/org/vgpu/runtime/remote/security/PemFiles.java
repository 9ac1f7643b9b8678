package org.vgpu.runtime.remote.security;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.error.IoReasons;

/**
 * Reads PEM certificates and PKCS#8 private keys with the JDK alone, so every problem with a file
 * is reported by name and with the fix, before Netty sees the material. Certificates and keys are
 * configuration: every problem is a {@link ConfigException}, in vgpu's words (the JDK's parser's
 * text stays in the cause, for logs).
 */
final class PemFiles {
    /** PEM files of certificates and keys are a few KiB; a cap keeps a wrong path from filling memory. */
    private static final long MAX_FILE_BYTES = 1 << 20;

    private static final Pattern PRIVATE_KEY =
            Pattern.compile("-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");
    private static final List<String> KEY_ALGORITHMS = List.of("RSA", "EC", "Ed25519", "Ed448");

    private PemFiles() {}

    /** Every certificate in a PEM file, in file order (a chain starts with the leaf). */
    static List<X509Certificate> certificates(Path file, String what) {
        String text = read(file, what);
        if (!text.contains("-----BEGIN CERTIFICATE-----")) {
            throw invalid(what, file, "holds no PEM certificate (a block starting with -----BEGIN CERTIFICATE-----)");
        }
        try {
            Collection<? extends Certificate> parsed = CertificateFactory.getInstance("X.509")
                    .generateCertificates(new ByteArrayInputStream(text.getBytes(StandardCharsets.US_ASCII)));
            List<X509Certificate> certificates = new ArrayList<>();
            for (Certificate certificate : parsed) {
                certificates.add((X509Certificate) certificate);
            }
            if (certificates.isEmpty()) {
                throw invalid(what, file, "holds no readable PEM certificate");
            }
            return certificates;
        } catch (CertificateException e) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    what + " file " + file + " holds a certificate that cannot be parsed (damaged, or not X.509)",
                    e);
        }
    }

    /** The unencrypted PKCS#8 private key of a PEM file; other key formats are refused with the command that converts them. */
    static PrivateKey privateKey(Path file, String what) {
        String text = read(file, what);
        if (text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----")) {
            throw invalid(
                    what,
                    file,
                    "is encrypted; a worker starts unattended and cannot ask for a passphrase."
                            + " Decrypt it into a file only its owner can read: openssl pkcs8 -in " + file
                            + " -out KEY.pem");
        }
        Matcher block = PRIVATE_KEY.matcher(text);
        if (!block.find()) {
            String hint =
                    text.contains("-----BEGIN RSA PRIVATE KEY-----") || text.contains("-----BEGIN EC PRIVATE KEY-----")
                            ? "is in the traditional OpenSSL format; convert it to PKCS#8 with: openssl pkcs8 -topk8 -nocrypt -in "
                                    + file + " -out KEY.pem"
                            : "holds no PEM private key (a block starting with -----BEGIN PRIVATE KEY-----)";
            throw invalid(what, file, hint);
        }
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(block.group(1));
        } catch (IllegalArgumentException e) {
            throw new ConfigException(
                    ConfigException.Code.INVALID,
                    what + " file " + file + " holds a private key block that is not base64",
                    e);
        }
        for (String algorithm : KEY_ALGORITHMS) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (GeneralSecurityException notThisAlgorithm) {
                // the PKCS#8 envelope names the algorithm, but the JDK only parses it per KeyFactory
            }
        }
        throw invalid(what, file, "holds a private key that is none of " + KEY_ALGORITHMS + " or is damaged");
    }

    private static String read(Path file, String what) {
        try {
            if (Files.size(file) > MAX_FILE_BYTES) {
                throw invalid(what, file, "is larger than " + MAX_FILE_BYTES + " bytes, so it is not a PEM file");
            }
            return Files.readString(file, StandardCharsets.ISO_8859_1);
        } catch (NoSuchFileException e) {
            throw new ConfigException(ConfigException.Code.MISSING, what + " file " + file + " does not exist", e);
        } catch (IOException e) {
            throw new ConfigException(
                    ConfigException.Code.UNREADABLE, what + " file " + file + " cannot be read: " + IoReasons.of(e), e);
        }
    }

    static ConfigException invalid(String what, Path file, String problem) {
        return new ConfigException(ConfigException.Code.INVALID, what + " file " + file + " " + problem);
    }
}
