package org.vgpu.migration;

import org.vgpu.runtime.api.DeviceProperties;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * A GpuBackend whose vGPUs are MigratableGpus over another backend's, with targets on that same
 * backend, so suites written against GpuBackend (the conformance suite) run on migratable vGPUs.
 */
final class MigratingBackend implements GpuBackend {
    private final GpuBackend inner;
    private final MigrationConfig config;

    MigratingBackend(GpuBackend inner, MigrationConfig config) {
        this.inner = inner;
        this.config = config;
    }

    @Override
    public String name() {
        return inner.name();
    }

    @Override
    public boolean isEmulation() {
        return inner.isEmulation();
    }

    @Override
    public int deviceCount() {
        return inner.deviceCount();
    }

    @Override
    public DeviceProperties deviceProperties(int device) {
        return inner.deviceProperties(device);
    }

    @Override
    public MigratableGpu open(int device, VaWindow window) {
        VirtualGpu initial = inner.open(device, window);
        return new MigratableGpu(initial, new MigrationTarget.LocalGpu(device), new NodeTargetResolver(inner), config,
                MigrationListener.NONE, MigrationFaults.NONE);
    }

    @Override
    public void close() {
        inner.close();
    }
}
