package org.vgpu.runtime.emulated;

import java.lang.foreign.MemorySegment;

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
}
