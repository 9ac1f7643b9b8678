package org.vgpu.migration;

import org.junit.jupiter.api.Tag;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.nativegpu.NativeBackend;

/**
 * The VirtualGpu contract on a MigratableGpu over this machine's GPU 0, without migrating (native to
 * native in one process is refused): the wrapper's recording and handle mapping on a real driver.
 */
@Tag("gpu")
class NativeMigratableGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return new MigratingBackend(NativeBackend.load(), MigrationConfig.DEFAULTS);
    }
}
