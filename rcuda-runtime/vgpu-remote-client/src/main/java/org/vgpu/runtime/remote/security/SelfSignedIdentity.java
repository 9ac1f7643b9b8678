package org.vgpu.runtime.remote.security;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLException;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.security.CertificatePin;

/**
 * A worker's fresh TLS identity: an EC P-256 key pair and a self-signed certificate for it, made at start by the
 * JDK's own {@code keytool} (no certificate code of vgpu's, no PKI for a site to run). Nobody vouches for the
 * certificate; the job's client accepts it because its session token pins the certificate's fingerprint, which the
 * worker proved to the tracker with the site key. The key lives in this process only: keytool writes it into a
 * keystore in a directory only this user can open, which is read and deleted at once.
 */
public record SelfSignedIdentity(PrivateKey key, X509Certificate certificate) {
    private static final String ALIAS = "vgpu-worker";
    private static final long KEYTOOL_SECONDS = 60;
    /**
     * The variable that hands the keystore's password to keytool, set in keytool's environment only: a word between
     * this class and the JDK's tool, not a variable of vgpu's (docs/reference/environment.md lists those).
     */
    private static final String KEYTOOL_SECRET_VARIABLE = "VGPU_KEYSTORE_SECRET";

    private static final SecureRandom RANDOM = new SecureRandom();

    public SelfSignedIdentity {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(certificate, "certificate");
    }

    /**
     * A new key pair and certificate, valid for 10 years (the pin, not the dates, is what clients check).
     *
     * @param commonName the certificate's subject CN, for people reading it (the worker's id)
     * @throws ConfigException when keytool is missing or fails (this Java runtime has no {@code bin/keytool})
     */
    public static SelfSignedIdentity generate(String commonName) {
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        if (!Files.isExecutable(keytool)) {
            throw new ConfigException(
                    ConfigException.Code.MISSING,
                    "cannot make the worker's TLS certificate: this Java runtime has no " + keytool
                            + " (use a full JDK or JRE, or [cluster] worker_tls = off)");
        }
        Path directory = null;
        try {
            directory = Files.createTempDirectory(
                    "vgpu-worker-tls-",
                    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            Path store = directory.resolve("identity.p12");
            byte[] secret = new byte[24];
            RANDOM.nextBytes(secret);
            String password = HexFormat.of().formatHex(secret);
            List<String> command = new ArrayList<>(List.of(
                    keytool.toString(),
                    "-genkeypair",
                    "-keyalg",
                    "EC",
                    "-groupname",
                    "secp256r1",
                    "-sigalg",
                    "SHA256withECDSA",
                    "-validity",
                    "3650",
                    "-dname",
                    "CN=" + commonName.replaceAll("[^A-Za-z0-9._-]", "_"),
                    "-alias",
                    ALIAS,
                    "-storetype",
                    "PKCS12",
                    "-keystore",
                    store.toString(),
                    // from the environment, not the command line that every user of the node can read
                    "-storepass:env",
                    KEYTOOL_SECRET_VARIABLE));
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
            builder.environment().put(KEYTOOL_SECRET_VARIABLE, password);
            Process process = builder.start();
            String output;
            try (InputStream in = process.getInputStream()) {
                output = new String(in.readNBytes(8192), StandardCharsets.UTF_8).strip();
            }
            if (!process.waitFor(KEYTOOL_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw failed("keytool did not finish within " + KEYTOOL_SECONDS + " s", null);
            }
            if (process.exitValue() != 0) {
                throw failed("keytool exited with status " + process.exitValue() + ": " + output, null);
            }
            KeyStore keyStore = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(store)) {
                keyStore.load(in, password.toCharArray());
            }
            return new SelfSignedIdentity((PrivateKey) keyStore.getKey(ALIAS, password.toCharArray()), (X509Certificate)
                    keyStore.getCertificate(ALIAS));
        } catch (IOException | GeneralSecurityException e) {
            throw failed(e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failed("interrupted", e);
        } finally {
            deleteQuietly(directory);
        }
    }

    /** The fingerprint a client pins. */
    public CertificatePin pin() {
        return CertificatePin.of(certificate);
    }

    /** A TLS 1.3 server context with this identity. */
    public SslContext serverContext() {
        try {
            return SslContextBuilder.forServer(key, certificate)
                    .protocols(TlsConfig.PROTOCOLS)
                    .build();
        } catch (SSLException e) {
            throw failed("the TLS library refused the new key and certificate", e);
        }
    }

    @Override
    public String toString() {
        return "self-signed " + pin();
    }

    private static ConfigException failed(String why, Exception cause) {
        return new ConfigException(
                ConfigException.Code.INVALID, "cannot make the worker's TLS certificate: " + why, cause);
    }

    private static void deleteQuietly(Path directory) {
        if (directory == null) {
            return;
        }
        try (var entries = Files.list(directory)) {
            for (Path entry : entries.toList()) {
                Files.deleteIfExists(entry);
            }
            Files.deleteIfExists(directory);
        } catch (IOException e) {
            // a temporary directory of this user's alone; nothing else can be done
        }
    }
}
