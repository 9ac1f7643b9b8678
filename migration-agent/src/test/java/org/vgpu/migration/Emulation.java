package org.vgpu.migration;

import org.vgpu.runtime.api.VaWindow;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.emulated.KernelTwinRegistry;
import org.vgpu.runtime.kernels.TestKernels;

/** Emulated devices and migratable vGPUs on them, for the tests. */
final class Emulation implements AutoCloseable {
    static final long MEMORY = 1L << 30;
    static final MigrationConfig VERIFIED = MigrationConfig.DEFAULTS.withVerifyCopies(true);

    final EmulatedBackend backend;

    Emulation(int devices) {
        this(devices, TestKernels.twins());
    }

    Emulation(int devices, KernelTwinRegistry twins) {
        backend = new EmulatedBackend(devices, MEMORY, twins);
    }

    MigratableGpu open(int vgpu, int device) {
        return open(vgpu, device, VERIFIED, MigrationListener.NONE, MigrationFaults.NONE);
    }

    MigratableGpu open(
            int vgpu, int device, MigrationConfig config, MigrationListener listener, MigrationFaults faults) {
        return new MigratableGpu(
                backend.open(device, VaWindow.forVgpu(vgpu)),
                new MigrationTarget.LocalGpu(device),
                new NodeTargetResolver(backend),
                config,
                listener,
                faults);
    }

    /**
     * A vGPU whose first backend is {@code source}, one the test made on device 0 (one that misbehaves on purpose),
     * moving onto this emulation's devices.
     */
    MigratableGpu wrap(VirtualGpu source) {
        return new MigratableGpu(
                source,
                gpu(0),
                new NodeTargetResolver(backend),
                VERIFIED,
                MigrationListener.NONE,
                MigrationFaults.NONE);
    }

    /** Bytes in use on an emulated device, by all vGPUs on it. */
    long usedBytes(int device) {
        try (var probe = backend.open(device, VaWindow.forVgpu(VaWindow.MAX_VGPUS - 1))) {
            return MEMORY - probe.memGetInfo().free();
        }
    }

    static MigrationTarget gpu(int index) {
        return new MigrationTarget.LocalGpu(index);
    }

    @Override
    public void close() {
        backend.close();
    }
}
