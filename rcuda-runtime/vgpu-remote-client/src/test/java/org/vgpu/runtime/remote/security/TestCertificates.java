package org.vgpu.runtime.remote.security;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Self-signed certificates for tests, made by the JDK's own {@code keytool} (no BouncyCastle) and
 * written as the PEM files a site would deploy: certificate and unencrypted PKCS#8 key. Each is
 * valid for "localhost" and 127.0.0.1. Tests are skipped where the JDK has no keytool.
 */
public record TestCertificates(Path certificate, Path privateKey) {
    private static final String PASSWORD = "test-only";

    /** A certificate valid from now for a day. */
    public static TestCertificates create(Path dir, String name) throws IOException, InterruptedException {
        return create(dir, name, List.of("-validity", "1"));
    }

    /** A certificate whose validity ended a day ago. */
    public static TestCertificates createExpired(Path dir, String name) throws IOException, InterruptedException {
        return create(dir, name, List.of("-startdate", "-3d", "-validity", "2"));
    }

    private static TestCertificates create(Path dir, String name, List<String> validity)
            throws IOException, InterruptedException {
        Path keytool = Path.of(System.getProperty("java.home"), "bin", "keytool");
        assumeTrue(Files.isExecutable(keytool), "this JDK has no keytool at " + keytool);
        Path keystore = dir.resolve(name + ".p12");
        List<String> command = new java.util.ArrayList<>(List.of(
                keytool.toString(),
                "-genkeypair",
                "-alias",
                name,
                "-keyalg",
                "EC",
                "-groupname",
                "secp256r1",
                "-dname",
                "CN=localhost",
                "-ext",
                "SAN=dns:localhost,ip:127.0.0.1",
                "-keystore",
                keystore.toString(),
                "-storetype",
                "PKCS12",
                "-storepass",
                PASSWORD,
                "-keypass",
                PASSWORD));
        command.addAll(validity);
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IOException("keytool failed: " + output);
        }
        try (InputStream in = Files.newInputStream(keystore)) {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(in, PASSWORD.toCharArray());
            Path certificate = dir.resolve(name + ".crt.pem");
            Path privateKey = dir.resolve(name + ".key.pem");
            Files.writeString(
                    certificate, pem("CERTIFICATE", store.getCertificate(name).getEncoded()));
            Files.writeString(
                    privateKey,
                    pem(
                            "PRIVATE KEY",
                            store.getKey(name, PASSWORD.toCharArray()).getEncoded()));
            return new TestCertificates(certificate, privateKey);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot read the keystore keytool wrote", e);
        }
    }

    private static String pem(String type, byte[] der) {
        String body = Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII))
                .encodeToString(der);
        return "-----BEGIN " + type + "-----\n" + body + "\n-----END " + type + "-----\n";
    }
}
