package org.vgpu.bench.migration;

import org.vgpu.migration.MigratableGpu;
import org.vgpu.migration.MigrationConfig;
import org.vgpu.migration.MigrationFaults;
import org.vgpu.migration.MigrationListener;
import org.vgpu.migration.MigrationTarget;
import org.vgpu.migration.NodeTargetResolver;
import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;

/** Source and target are two devices of one local backend (the emulation: native to native is refused). */
final class LocalPlacement implements Placement {
    private final GpuBackend backend;
    private final MigrationConfig config;

    LocalPlacement(GpuBackend backend, MigrationConfig config) {
        this.backend = backend;
        this.config = config;
    }

    /** A migratable vGPU on {@code device} of {@code backend}, whose targets are that backend's devices. */
    static MigratableGpu migratable(GpuBackend backend, int vgpu, int device, MigrationConfig config) {
        return new MigratableGpu(
                backend.open(device, VaWindow.forVgpu(vgpu)),
                new MigrationTarget.LocalGpu(device),
                new NodeTargetResolver(backend),
                config,
                MigrationListener.NONE,
                MigrationFaults.NONE);
    }

    @Override
    public MigratableGpu openOnSource(int vgpu) {
        return migratable(backend, vgpu, 0, config);
    }

    @Override
    public MigrationConfig config() {
        return config;
    }

    @Override
    public VirtualGpu openPlainOnSource(int vgpu) {
        return backend.open(0, VaWindow.forVgpu(vgpu));
    }

    @Override
    public GpuBackend local() {
        return backend;
    }

    @Override
    public int targetDevice() {
        return 1;
    }

    @Override
    public String describe() {
        return backend.name() + " device 0 -> " + backend.name() + " device 1";
    }

    @Override
    public void close() {}
}
