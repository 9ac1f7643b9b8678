package org.vgpu.runtime.remote.security;

import javax.net.ssl.SSLException;

/**
 * Why a TLS handshake between a client and a GPU worker failed, in vgpu's words and from either
 * side: the JDK's TLS stack explains in its own terms ("PKIX path building failed: ...") and with
 * its class names, which an admin should not have to decode. The exception stays the cause of the
 * failure it explains, for logs.
 */
public final class TlsFailures {
    private TlsFailures() {}

    /** Whether the peer answered with bytes that are no TLS record. */
    public static boolean notTls(SSLException failure) {
        String jdkText = String.valueOf(failure.getMessage());
        return jdkText.contains("Unsupported or unrecognized SSL message") || jdkText.contains("not an SSL/TLS record");
    }

    public static String reason(SSLException failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof PinnedCertificate.Mismatch mismatch) {
                return mismatch.getMessage();
            }
        }
        String jdkText = String.valueOf(failure.getMessage());
        if (jdkText.contains("PKIX") || jdkText.contains("certification path")) {
            return "the certificate is not signed by a trusted certificate";
        }
        if (jdkText.contains("No subject alternative") || jdkText.contains("No name matching")) {
            return "the certificate does not name the address connected to";
        }
        if (jdkText.contains("NotAfter") || jdkText.contains("NotBefore") || jdkText.contains("validity")) {
            return "the certificate has expired or is not valid yet";
        }
        if (notTls(failure)) {
            return "the peer does not speak TLS";
        }
        if (jdkText.contains("certificate_unknown") || jdkText.contains("bad_certificate")) {
            return "the peer refused the certificate";
        }
        return "the TLS handshake failed";
    }
}
