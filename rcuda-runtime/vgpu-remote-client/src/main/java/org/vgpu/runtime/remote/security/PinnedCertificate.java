package org.vgpu.runtime.remote.security;

import java.net.Socket;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.Objects;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.X509ExtendedTrustManager;

import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;

import org.vgpu.common.error.ConfigException;
import org.vgpu.common.security.CertificatePin;

/**
 * A client's TLS that accepts exactly one worker certificate, the one its session token pins: no certificate
 * authority, no host name check (a holder's worker makes its own certificate, which names nothing a client could check
 * against); any other certificate ends the handshake with {@link Mismatch}, which names both fingerprints.
 */
public final class PinnedCertificate {
    private PinnedCertificate() {}

    /** The worker presented another certificate than the pinned one. */
    public static final class Mismatch extends CertificateException {
        private static final long serialVersionUID = 1L;

        Mismatch(String message) {
            super(message);
        }
    }

    /** A TLS 1.3 client context that trusts the certificate {@code pin} names and no other. */
    public static SslContext clientContext(CertificatePin pin) {
        try {
            return SslContextBuilder.forClient()
                    .trustManager(new PinTrust(pin))
                    .protocols(TlsConfig.PROTOCOLS)
                    .build();
        } catch (SSLException e) {
            throw new ConfigException(
                    ConfigException.Code.INVALID, "the TLS library refused a pinned-certificate client context", e);
        }
    }

    /** Only the server's leaf certificate counts: its fingerprint must be the pinned one. */
    private static final class PinTrust extends X509ExtendedTrustManager {
        private final CertificatePin pin;

        PinTrust(CertificatePin pin) {
            this.pin = Objects.requireNonNull(pin, "pin");
        }

        private void check(X509Certificate[] chain) throws CertificateException {
            if (chain == null || chain.length == 0) {
                throw new Mismatch("the worker presented no certificate, but its session token pins " + pin);
            }
            if (!pin.matches(chain[0])) {
                throw new Mismatch("the worker's certificate is " + CertificatePin.of(chain[0])
                        + ", not the " + pin + " its session token pins (another process answers at that address,"
                        + " or the worker was restarted since the tracker issued the token)");
            }
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            check(chain);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
                throws CertificateException {
            check(chain);
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
                throws CertificateException {
            check(chain);
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
            throw new CertificateException("a pinned-certificate context is a client's");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
                throws CertificateException {
            throw new CertificateException("a pinned-certificate context is a client's");
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
                throws CertificateException {
            throw new CertificateException("a pinned-certificate context is a client's");
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    }
}
