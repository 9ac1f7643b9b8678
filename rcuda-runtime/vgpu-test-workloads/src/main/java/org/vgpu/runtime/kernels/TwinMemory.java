package org.vgpu.runtime.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;
import org.vgpu.runtime.emulated.EmulatedMemory;

/**
 * Typed views of emulated device memory for twins. A twin asks for exactly the elements its active
 * threads touch, so an out-of-range pointer or count fails in {@link EmulatedMemory#segment} with
 * CUDA_ERROR_ILLEGAL_ADDRESS instead of reading whatever lies next to an allocation; a pointer not
 * aligned to its element fails here, where a GPU would raise a misaligned-address fault.
 */
final class TwinMemory {
    /** Device memory is little endian whatever the host is. */
    static final ValueLayout.OfFloat FLOAT = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private TwinMemory() {}

    /** {@code count} floats starting at device address {@code address}. */
    static MemorySegment floats(EmulatedMemory memory, long address, long count) {
        return elements(memory, address, count, Float.BYTES);
    }

    static MemorySegment ints(EmulatedMemory memory, long address, long count) {
        return elements(memory, address, count, Integer.BYTES);
    }

    static MemorySegment longs(EmulatedMemory memory, long address, long count) {
        return elements(memory, address, count, Long.BYTES);
    }

    static MemorySegment bytes(EmulatedMemory memory, long address, long count) {
        return elements(memory, address, count, 1);
    }

    private static MemorySegment elements(EmulatedMemory memory, long address, long count, int elementSize) {
        if (address % elementSize != 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_ILLEGAL_ADDRESS,
                    String.format(
                            "CPU emulation: kernel accessed %d-byte elements at misaligned address 0x%x"
                                    + " (a GPU faults with CUDA_ERROR_MISALIGNED_ADDRESS)",
                            elementSize, address));
        }
        return memory.segment(address, Math.multiplyExact(count, elementSize));
    }
}
