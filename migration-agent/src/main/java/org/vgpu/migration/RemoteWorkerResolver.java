package org.vgpu.migration;

import java.util.Objects;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;

import org.vgpu.common.net.Endpoint;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.remote.client.RemoteConfig;
import org.vgpu.runtime.remote.client.RemoteGpu;
import org.vgpu.runtime.remote.client.WorkerEndpoint;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * Opens remote targets: a session on the GPU worker at {@code host:port}, with the worker's id and
 * session token that the tracker handed out with the lend ({@link WorkerCredentials}). The remote
 * vGPUs it opens use its event loops, so it is closed after them.
 */
public final class RemoteWorkerResolver implements TargetResolver, AutoCloseable {

    /** The worker's id, session token and release action for a worker endpoint and a vGPU window. */
    @FunctionalInterface
    public interface WorkerCredentials {
        /** @throws VgpuException VGPU_AUTH_FAILED (or another code) when nobody lent that worker to this job */
        WorkerEndpoint endpointFor(Endpoint worker, VaWindow window);
    }

    private final WorkerCredentials credentials;
    private final RemoteConfig config;
    private final SslContext ssl;
    private final EventLoopGroup group;

    /** @param ssl TLS for every connection, or null for plain TCP */
    public RemoteWorkerResolver(WorkerCredentials credentials, RemoteConfig config, SslContext ssl) {
        this.credentials = Objects.requireNonNull(credentials, "credentials");
        this.config = Objects.requireNonNull(config, "config");
        this.ssl = ssl;
        this.group = NettyTransport.newEventLoopGroup(
                Math.max(1, Math.min(2, Runtime.getRuntime().availableProcessors() / 2)),
                "vgpu-migration-remote",
                config.spinNanos());
    }

    @Override
    public VirtualGpu open(MigrationTarget target, VaWindow window, VirtualGpu source) {
        if (!(target instanceof MigrationTarget.RemoteWorker worker)) {
            throw new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, target + " is not a remote worker");
        }
        return RemoteGpu.connect(group, credentials.endpointFor(worker.endpoint(), window), window, config, ssl);
    }

    /** Stops the event loops; remote vGPUs still open lose their workers. */
    @Override
    public void close() {
        group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
    }
}
