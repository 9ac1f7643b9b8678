package org.vgpu.runtime.emulated;

import java.lang.foreign.MemorySegment;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Device memory of an emulated vGPU as kernel twins see it: byte ranges addressed by the same
 * window addresses a GPU would use, so pointers stored in device memory can be followed.
 */
public interface EmulatedMemory {

    /**
     * The host memory behind device range {@code [address, address + bytes)}. Throws
     * CUDA_ERROR_ILLEGAL_ADDRESS when the range is not inside one live allocation, as a GPU
     * kernel touching it would fault.
     */
    MemorySegment segment(long address, long bytes);

    /**
     * The host memory of the launching kernel's module variable {@code name} (a {@code .global} or
     * {@code .const} of its PTX), which a kernel reaches by name, not by pointer. Throws
     * CUDA_ERROR_ILLEGAL_ADDRESS when the module defines no such variable.
     */
    default MemorySegment global(String name) {
        throw new VgpuException(
                ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS, "module variable " + name + " is not reachable from here");
    }
}
