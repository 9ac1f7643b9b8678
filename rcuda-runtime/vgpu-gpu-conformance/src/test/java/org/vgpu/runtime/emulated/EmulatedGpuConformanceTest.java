package org.vgpu.runtime.emulated;

import org.vgpu.runtime.api.GpuBackend;
import org.vgpu.runtime.conformance.VirtualGpuConformanceTest;
import org.vgpu.runtime.kernels.TestKernels;

/** The VirtualGpu contract on the CPU emulation (runs everywhere, CI included). */
class EmulatedGpuConformanceTest extends VirtualGpuConformanceTest {
    @Override
    protected GpuBackend createBackend() {
        return new EmulatedBackend(2, 1L << 30, TestKernels.twins());
    }
}
