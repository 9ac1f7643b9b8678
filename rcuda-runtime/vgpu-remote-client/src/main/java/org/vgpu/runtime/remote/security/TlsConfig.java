package org.vgpu.runtime.remote.security;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.CertificateExpiredException;
import java.security.cert.CertificateNotYetValidException;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLException;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;

import org.vgpu.common.error.ConfigException;

/**
 * TLS for connections to GPU workers, which is optional: session tokens authenticate the client
 * either way, TLS also keeps the token and the data private on the wire. Both ends are vgpu, so
 * only TLS 1.3 is offered. Files are PEM; every problem with them is a {@link ConfigException} that
 * names the file (MISSING, UNREADABLE, or INVALID for what it holds).
 *
 * <p>Build the context once at start-up, so a bad file stops the process before it serves anyone.
 */
public sealed interface TlsConfig permits TlsConfig.Server, TlsConfig.Client {
    List<String> PROTOCOLS = List.of("TLSv1.3");

    /** A new Netty context built from the files as they are now. */
    SslContext newSslContext();

    /**
     * How a worker's connections use TLS: with a site's certificate files ({@link Server}), or with a certificate the
     * worker makes at start ({@link SelfSigned}), which its clients' session tokens pin.
     */
    sealed interface WorkerTls permits Server, SelfSigned {
        /** The worker command's options for it. */
        List<String> workerArguments();
    }

    /** A worker that makes a fresh self-signed certificate at start ({@link SelfSignedIdentity}). */
    record SelfSigned() implements WorkerTls {
        @Override
        public List<String> workerArguments() {
            return List.of("--tls-self-signed");
        }
    }

    /**
     * A worker's side: its certificate chain (leaf first) and the leaf's unencrypted PKCS#8
     * private key. The certificate's subject alternative names must include the host name or
     * address clients use to reach the worker, since clients verify it.
     */
    record Server(Path certificateChain, Path privateKey) implements TlsConfig, WorkerTls {
        public Server {
            Objects.requireNonNull(certificateChain, "certificateChain");
            Objects.requireNonNull(privateKey, "privateKey");
        }

        @Override
        public List<String> workerArguments() {
            return List.of("--tls-cert", certificateChain.toString(), "--tls-key", privateKey.toString());
        }

        /**
         * @throws ConfigException when a file is missing or unreadable, the key does not belong to
         *         the chain's first certificate, or that certificate is expired or not yet valid
         */
        @Override
        public SslContext newSslContext() {
            List<X509Certificate> chain = PemFiles.certificates(certificateChain, "TLS certificate chain");
            PrivateKey key = PemFiles.privateKey(privateKey, "TLS private key");
            X509Certificate leaf = chain.getFirst();
            requireCurrentlyValid(leaf);
            requireMatchingKey(leaf, key);
            try {
                return SslContextBuilder.forServer(key, chain)
                        .protocols(PROTOCOLS)
                        .build();
            } catch (SSLException | IllegalArgumentException e) {
                throw new ConfigException(
                        ConfigException.Code.INVALID,
                        "TLS certificate chain " + certificateChain + " and key " + privateKey
                                + " make no TLS server context (the TLS library refused them)",
                        e);
            }
        }

        private void requireCurrentlyValid(X509Certificate leaf) {
            try {
                leaf.checkValidity();
            } catch (CertificateExpiredException e) {
                throw PemFiles.invalid(
                        "TLS certificate chain",
                        certificateChain,
                        "starts with a certificate that expired on "
                                + leaf.getNotAfter().toInstant());
            } catch (CertificateNotYetValidException e) {
                throw PemFiles.invalid(
                        "TLS certificate chain",
                        certificateChain,
                        "starts with a certificate that is not valid before "
                                + leaf.getNotBefore().toInstant());
            }
        }

        /** Signs a probe with the key and checks it with the certificate: the JDK's TLS stack would only fail at the first handshake. */
        private void requireMatchingKey(X509Certificate leaf, PrivateKey key) {
            String mismatch = "TLS private key " + privateKey + " does not belong to the first certificate of "
                    + certificateChain + " (" + leaf.getSubjectX500Principal().getName() + ")";
            String signatureAlgorithm = switch (key.getAlgorithm()) {
                case "RSA" -> "SHA256withRSA";
                case "EC" -> "SHA256withECDSA";
                case "Ed25519", "Ed448", "EdDSA" -> "EdDSA";
                default ->
                    throw PemFiles.invalid(
                            "TLS private key",
                            privateKey,
                            "holds a " + key.getAlgorithm() + " key, which is not supported (RSA, EC or EdDSA are)");
            };
            byte[] probe = "vgpu TLS key check".getBytes(StandardCharsets.US_ASCII);
            try {
                Signature signer = Signature.getInstance(signatureAlgorithm);
                signer.initSign(key);
                signer.update(probe);
                byte[] signature = signer.sign();
                Signature checker = Signature.getInstance(signatureAlgorithm);
                checker.initVerify(leaf.getPublicKey());
                checker.update(probe);
                if (!checker.verify(signature)) {
                    throw new ConfigException(ConfigException.Code.INVALID, mismatch);
                }
            } catch (GeneralSecurityException e) {
                throw new ConfigException(
                        ConfigException.Code.INVALID, mismatch + ": it cannot sign what the certificate checks", e);
            }
        }
    }

    /**
     * A client's side: the certificates it trusts (the site's CA, or the workers' self-signed
     * certificates). The client checks the worker's certificate against the host name it
     * connects to, so create handlers with {@code context.newHandler(alloc, host, port)}.
     */
    record Client(Path trustedCertificates) implements TlsConfig {
        public Client {
            Objects.requireNonNull(trustedCertificates, "trustedCertificates");
        }

        /** @throws ConfigException when the file is missing, unreadable or holds no certificate */
        @Override
        public SslContext newSslContext() {
            List<X509Certificate> trusted = PemFiles.certificates(trustedCertificates, "TLS trusted certificates");
            try {
                return SslContextBuilder.forClient()
                        .trustManager(trusted)
                        .protocols(PROTOCOLS)
                        .endpointIdentificationAlgorithm("HTTPS")
                        .build();
            } catch (SSLException | IllegalArgumentException e) {
                throw new ConfigException(
                        ConfigException.Code.INVALID,
                        "TLS trusted certificates " + trustedCertificates
                                + " make no TLS client context (the TLS library refused them)",
                        e);
            }
        }
    }
}
