package org.vgpu.migration;

import java.util.List;

import org.junit.jupiter.api.BeforeEach;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.emulated.EmulatedBackend;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The VirtualGpu contract on a MigratableGpu over the emulation, migrated to another emulated device
 * after the suite has opened it and loaded the test kernels: every test then runs on the target
 * with a module handle that was remapped by the replay.
 */
class MigratableGpuConformanceTest extends VirtualGpuConformanceTest {

    @Override
    protected GpuBackend createBackend() {
        return new MigratingBackend(
                new EmulatedBackend(3, 1L << 30, TestKernels.twins()), MigrationConfig.DEFAULTS.withVerifyCopies(true));
    }

    /** The devices the vGPU moves to, in order, before each test. */
    protected List<Integer> migrationsBeforeEachTest() {
        return List.of(1);
    }

    /** Moves on to the next emulated device (of three), from wherever the vGPU is now. */
    @Override
    protected void moveMidTest() {
        ((MigratableGpu) gpu).migrate(new MigrationTarget.LocalGpu((deviceNow() + 1) % 3));
    }

    @Override
    protected int deviceNow() {
        return ((MigrationTarget.LocalGpu) ((MigratableGpu) gpu).placement()).index();
    }

    @BeforeEach
    void migrateAfterOpening() {
        MigratableGpu migratable = (MigratableGpu) gpu;
        for (int device : migrationsBeforeEachTest()) {
            migratable.migrate(new MigrationTarget.LocalGpu(device));
        }
    }
}
