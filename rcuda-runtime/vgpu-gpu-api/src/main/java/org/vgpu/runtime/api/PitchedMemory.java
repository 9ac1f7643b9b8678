package org.vgpu.runtime.api;

import java.lang.foreign.MemorySegment;

/**
 * One side of a {@link VirtualGpu#memcpy2D}: rows {@code pitch} bytes apart from the start, in host
 * or device memory, as {@code CUDA_MEMCPY2D}'s source or destination with its X and Y offsets
 * folded into the start.
 */
public sealed interface PitchedMemory {

    /** Bytes from the start of one row to the start of the next. */
    long pitch();

    /** Rows in host memory, from the first byte of {@code memory}. */
    record Host(MemorySegment memory, long pitch) implements PitchedMemory {}

    /** Rows in device memory, from {@code address}. */
    record Device(long address, long pitch) implements PitchedMemory {}
}
