package org.vgpu.runtime.remote.client;

import java.nio.channels.ClosedChannelException;
import javax.net.ssl.SSLException;

import io.netty.handler.codec.DecoderException;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.remote.security.TlsFailures;

/**
 * Whether a connection to a worker is lost, and what its loss says. The first loss wins: every
 * call waiting then, and every later one, fails with it (VGPU_WORKER_LOST naming the worker, or
 * the protocol or TLS failure that ended the session); other connections are not affected.
 */
final class ConnectionLoss {
    private final WorkerEndpoint endpoint;
    private volatile VgpuException lost;
    /** This client ends the session itself, so the connection's end is no failure of the worker's. */
    private volatile boolean closing;
    /** Runs once as the connection is lost, before anyone can hear of it. */
    private volatile Runnable onLoss = () -> {};
    /** Runs in an app thread before it hears of the loss. */
    private volatile Runnable beforeTelling = () -> {};

    ConnectionLoss(WorkerEndpoint endpoint) {
        this.endpoint = endpoint;
    }

    /**
     * Has {@code stop} run as the connection is lost, before the loss is recorded, and {@code settle} run in each app
     * thread before it hears of the loss (from {@link #checkAlive} or a call that failed with it): the stripes reading
     * chunks straight into callers' memory stop, and a caller frees that memory only once they did.
     */
    void beforeTelling(Runnable stop, Runnable settle) {
        onLoss = stop;
        beforeTelling = settle;
    }

    /** Throws the loss, with this thread's stack, if the connection is lost. */
    void checkAlive() {
        VgpuException failure = lost;
        if (failure != null) {
            beforeTelling.run();
            throw new VgpuException(failure.code(), failure.detail(), failure);
        }
    }

    /** Lets this app thread hear of the loss: what must settle first has. */
    void settled() {
        if (lost != null) {
            beforeTelling.run();
        }
    }

    boolean isLost() {
        return lost != null;
    }

    /** Records {@code failure} unless the connection was lost before. Event loop. */
    VgpuException lose(VgpuException failure) {
        if (lost == null) {
            onLoss.run();
            lost = failure;
        }
        return lost;
    }

    /** The client is closing the connection: its end, from now on, is the client's doing. */
    void closing() {
        closing = true;
    }

    /** The connection ended without a goodbye. */
    VgpuException connectionClosed() {
        return new VgpuException(
                ErrorCode.VGPU_WORKER_LOST,
                closing
                        ? "the session with " + endpoint.describe() + " is closed"
                        : endpoint.describe() + " closed the connection (the worker ended or the network failed)");
    }

    /** Why a client that pins the worker's certificate met a worker without TLS. */
    private String pinnedHint(SSLException failure) {
        return endpoint.pinnedCertificate().isPresent() && TlsFailures.notTls(failure)
                ? " (its session token pins a TLS certificate, so this client speaks TLS only: a worker started"
                        + " without TLS, or another program, answers at that address)"
                : "";
    }

    /** The worker answered HELLO, or a request of no call (id 0), with an error: it refused or ended the session. */
    VgpuException sessionRefused(VgpuException failure, boolean open) {
        String what = open ? " ended the session: " : " refused the session: ";
        return new VgpuException(failure.code(), endpoint.describe() + what + failure.detail(), failure);
    }

    /** The worker stayed silent past its idle timeout. */
    VgpuException keepaliveExpired(long silentMillis) {
        return new VgpuException(
                ErrorCode.VGPU_WORKER_LOST,
                "no frame from " + endpoint.describe() + " for " + silentMillis + " ms: keepalive expired");
    }

    /**
     * What an exception of the channel's pipeline means for the session: a broken protocol, a
     * failed TLS handshake or a failed connection; null for a write to a channel already closed,
     * whose closing is reported on its own.
     */
    VgpuException ofPipelineException(Throwable cause) {
        Throwable failure = cause instanceof DecoderException && cause.getCause() != null ? cause.getCause() : cause;
        if (failure instanceof VgpuException violation && violation.code() == ErrorCode.VGPU_PROTOCOL_ERROR) {
            return new VgpuException(
                    ErrorCode.VGPU_PROTOCOL_ERROR,
                    endpoint.describe() + " broke the protocol: " + violation.detail(),
                    violation);
        } else if (failure instanceof SSLException tls) {
            return new VgpuException(
                    ErrorCode.VGPU_AUTH_FAILED,
                    "TLS with " + endpoint.describe() + " failed: " + TlsFailures.reason(tls) + pinnedHint(tls),
                    tls);
        } else if (!(failure instanceof ClosedChannelException)) {
            return new VgpuException(
                    ErrorCode.VGPU_WORKER_LOST,
                    "the connection to " + endpoint.describe() + " failed: " + VgpuFailure.describe(failure),
                    failure);
        }
        return null;
    }
}
