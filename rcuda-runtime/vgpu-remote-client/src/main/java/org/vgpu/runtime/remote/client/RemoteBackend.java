package org.vgpu.runtime.remote.client;

import java.util.Objects;
import java.util.concurrent.TimeUnit;

import io.netty.channel.EventLoopGroup;
import io.netty.handler.ssl.SslContext;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.core.FailureCollector;
import org.vgpu.runtime.remote.transport.NettyTransport;

/**
 * vGPUs on GPU workers of other nodes, which a {@link WorkerSource} supplies. Each vGPU gets its
 * own worker and connection, so a lost worker fails only its own vGPU; the connections share a few
 * event-loop threads.
 */
public final class RemoteBackend implements GpuBackend {
    private final WorkerSource source;
    private final RemoteConfig config;
    private final SslContext ssl;
    private final EventLoopGroup group;

    /** @param ssl TLS for every connection, or null for plain TCP */
    public RemoteBackend(WorkerSource source, RemoteConfig config, SslContext ssl) {
        this.source = Objects.requireNonNull(source, "source");
        this.config = Objects.requireNonNull(config, "config");
        this.ssl = ssl;
        int threads = Math.max(1, Math.min(4, Runtime.getRuntime().availableProcessors() / 2));
        this.group = NettyTransport.newEventLoopGroup(threads, "vgpu-remote-io", config.spinNanos());
    }

    @Override
    public String name() {
        return RemoteGpu.NAME;
    }

    /** True when the workers run the CPU emulation, which every report must say. */
    @Override
    public boolean isEmulation() {
        for (int device = 0; device < source.deviceCount(); device++) {
            if (!source.deviceProperties(device).emulated()) {
                return false;
            }
        }
        return source.deviceCount() > 0;
    }

    @Override
    public int deviceCount() {
        return source.deviceCount();
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        checkDevice(device);
        return source.deviceProperties(device);
    }

    @Override
    public VirtualGpu open(int device, VaWindow window) {
        checkDevice(device);
        return RemoteGpu.connect(group, source.open(device, window), window, config, ssl);
    }

    /** Stops the event loops (open vGPUs lose their workers) and closes the source. */
    @Override
    public void close() {
        FailureCollector failures = new FailureCollector();
        failures.attempt(() -> group.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly());
        failures.attempt(source::close);
        failures.rethrow();
    }

    private void checkDevice(int device) {
        if (device < 0 || device >= source.deviceCount()) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_DEVICE,
                    "remote device " + device + " does not exist (the worker source offers " + source.deviceCount()
                            + ")");
        }
    }
}
