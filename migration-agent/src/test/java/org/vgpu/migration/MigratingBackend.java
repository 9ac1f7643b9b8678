package org.vgpu.migration;

import org.vgpu.runtime.api.ForwardingGpuBackend;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * A GpuBackend whose vGPUs are MigratableGpus over another backend's, with targets on that same
 * backend, so suites written against GpuBackend (the conformance suite) run on migratable vGPUs.
 */
final class MigratingBackend extends ForwardingGpuBackend {
    private final MigrationConfig config;

    MigratingBackend(GpuBackend inner, MigrationConfig config) {
        super(inner);
        this.config = config;
    }

    @Override
    public MigratableGpu open(int device, VaWindow window) {
        VirtualGpu initial = delegate().open(device, window);
        return new MigratableGpu(
                initial,
                new MigrationTarget.LocalGpu(device),
                new NodeTargetResolver(delegate()),
                config,
                MigrationListener.NONE,
                MigrationFaults.NONE);
    }
}
