package org.vgpu.migration;

import org.vgpu.runtime.api.DriverHandles;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.StreamHandle;

/**
 * The driver's handles behind the app's handles of a migratable vGPU: each app handle translated to the backend's it
 * stands for now ({@link ReplayLog}), whose driver handle the backend knows. Valid while the vGPU's gate is held.
 */
record AppDriverHandles(DriverHandles onGpu, ReplayLog log) implements DriverHandles {
    @Override
    public long driverContext() {
        return onGpu.driverContext();
    }

    @Override
    public long driverFunction(FunctionHandle function) {
        return onGpu.driverFunction(log.backendFunction(function));
    }

    @Override
    public long driverStream(StreamHandle stream) {
        return onGpu.driverStream(log.backendStream(stream));
    }
}
