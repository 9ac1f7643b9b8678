package org.vgpu.runtime.emulated;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.KernelArgs;

/**
 * The Java twin of a CUDA kernel, run by the CPU emulation in place of the PTX. A twin computes
 * what the whole grid computes (it loops over the threads itself) and reads and writes device
 * memory only through {@link EmulatedMemory}, at the same addresses the GPU would use. A GPU test
 * proves each twin agrees with its PTX kernel on the same inputs.
 */
@FunctionalInterface
public interface KernelTwin {
    void run(Dim3 grid, Dim3 block, KernelArgs args, EmulatedMemory memory);
}
