package org.vgpu.runtime.nativegpu;

import org.junit.jupiter.api.Tag;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;

/** The VirtualGpu contract on this machine's GPU 0. */
@Tag("gpu")
class NativeGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return NativeBackend.load();
    }
}
