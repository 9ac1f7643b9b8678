package org.vgpu.runtime.remote.client;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

import org.vgpu.common.error.VgpuFailure;
import org.vgpu.common.security.CertificatePin;
import org.vgpu.common.security.SessionToken;

/**
 * Where a remote vGPU's worker listens and what entitles the client to it. Closing the endpoint
 * hands the worker back to whoever supplied it (a test stops its process, a tracker returns the
 * lend); a remote vGPU closes its endpoint when it is closed.
 *
 * @param workerId the worker's name, used in every error about it
 * @param host     the worker's host, or the path of its Unix domain socket when {@code port} is {@link #UNIX_SOCKET}
 * @param token    the session token the worker checks; never logged
 * @param release  what closing the endpoint does
 */
// "try": release is whatever supplier hands the worker back (a test's process stop waits, so may be interrupted);
// close() passes on what it throws, and the callers that close an endpoint handle Exception.
@SuppressWarnings("try")
public record WorkerEndpoint(String workerId, String host, int port, String token, AutoCloseable release)
        implements AutoCloseable {

    /** The port of an endpoint that is a Unix domain socket (a launcher's local worker), whose path is the host. */
    public static final int UNIX_SOCKET = -1;

    public WorkerEndpoint {
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(release, "release");
    }

    /** The worker listening on the Unix domain socket {@code socket}. */
    public static WorkerEndpoint onSocket(String workerId, Path socket, String token, AutoCloseable release) {
        return new WorkerEndpoint(workerId, socket.toString(), UNIX_SOCKET, token, release);
    }

    /** The worker's Unix domain socket; empty for a worker on TCP. */
    public Optional<Path> socket() {
        return port == UNIX_SOCKET ? Optional.of(Path.of(host)) : Optional.empty();
    }

    /**
     * The worker's TLS certificate that the token pins: the client then speaks TLS with the worker and accepts that
     * certificate only. Empty for a token that pins none (plain TCP, or TLS trusted otherwise), and for a worker on a
     * Unix domain socket (the kernel, not the network, carries its bytes). A text that is not a session token pins
     * nothing: the worker refuses it before any session opens.
     */
    public Optional<CertificatePin> pinnedCertificate() {
        if (port == UNIX_SOCKET) {
            return Optional.empty();
        }
        try {
            return SessionToken.pinnedCertificate(token);
        } catch (VgpuFailure notAToken) {
            return Optional.empty();
        }
    }

    /** "worker W at host:port" (or "at unix:PATH"), as errors name it. */
    public String describe() {
        return "worker " + workerId + " at " + (port == UNIX_SOCKET ? "unix:" + host : host + ":" + port);
    }

    @Override
    public void close() throws Exception {
        release.close();
    }

    @Override
    public String toString() {
        return "WorkerEndpoint[" + describe() + "]";
    }
}
