package org.vgpu.runtime.remote.client;

import java.util.Objects;

/**
 * Where a remote vGPU's worker listens and what entitles the client to it. Closing the endpoint
 * hands the worker back to whoever supplied it (a test stops its process, a tracker returns the
 * lend); a remote vGPU closes its endpoint when it is closed.
 *
 * @param workerId the worker's name, used in every error about it
 * @param token    the session token the worker checks; never logged
 * @param release  what closing the endpoint does
 */
// "try": release is whatever supplier hands the worker back (a test's process stop waits, so may be interrupted);
// close() passes on what it throws, and the callers that close an endpoint handle Exception.
@SuppressWarnings("try")
public record WorkerEndpoint(String workerId, String host, int port, String token, AutoCloseable release)
        implements AutoCloseable {

    public WorkerEndpoint {
        Objects.requireNonNull(workerId, "workerId");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(release, "release");
    }

    /** "worker W at host:port", as errors name it. */
    public String describe() {
        return "worker " + workerId + " at " + host + ":" + port;
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
