package org.vgpu.runtime.remote.client;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.VaWindow;

/**
 * Supplies the workers a {@link RemoteBackend} opens its vGPUs on: tests start worker processes,
 * the tracker hands out the endpoints of lent GPUs. Devices are what the source can serve, and
 * their properties are those the workers will report.
 */
public interface WorkerSource extends AutoCloseable {

    int deviceCount();

    DeviceProperties deviceProperties(int device);

    /** A worker ready to serve vGPU {@code window.vgpuIndex()} on {@code device}, with a token for it. */
    WorkerEndpoint open(int device, VaWindow window);

    @Override
    default void close() {}
}
