package org.vgpu.runtime.core;

import java.lang.foreign.MemorySegment;
import java.util.function.IntSupplier;

import org.vgpu.runtime.api.ContextLimit;
import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.FunctionAttribute;
import org.vgpu.runtime.api.PitchedMemory;
import org.vgpu.runtime.api.VgpuException;

/**
 * The checks of operands that need no device state: nulls, counts and sizes, host buffers, pitches
 * and their overflow, launch shapes and attribute ranges. Each failure is CUDA_ERROR_INVALID_VALUE
 * with a message that names the call or the operand, so that bad input is an error instead of a
 * crash on the device. Device pointers are {@link PointerChecks}'.
 */
final class OperandChecks {

    private OperandChecks() {}

    /** {@code operand}, which {@code call} needs: CUDA_ERROR_INVALID_VALUE when it is null. */
    static <T> T given(T operand, String call, String what) {
        if (operand == null) {
            throw invalid(call + ": the " + what + " is null");
        }
        return operand;
    }

    /** {@code cuCtxSetLimit}'s limit, given, and value, at least 0. */
    static void limit(ContextLimit limit, long value) {
        given(limit, "cuCtxSetLimit", "limit");
        if (value < 0) {
            throw invalid("cuCtxSetLimit: " + limit + " of " + value + " bytes is negative");
        }
    }

    static void count(long bytes) {
        if (bytes < 0) {
            throw invalid("byte count must be >= 0, got " + bytes);
        }
    }

    static void host(MemorySegment host, long bytes, boolean async, String role) {
        count(bytes);
        if (host == null) {
            throw invalid("host " + role + " is null");
        }
        if (host.byteSize() < bytes) {
            throw invalid("host " + role + " holds " + host.byteSize() + " bytes, the copy needs " + bytes);
        }
        if (async && !host.isNative()) {
            throw invalid("asynchronous copies need native host memory"
                    + " (memAllocHost or an Arena); a Java heap array may move before the copy runs");
        }
    }

    static void hostDestination(MemorySegment dst, long bytes, boolean async) {
        host(dst, bytes, async, "destination");
        if (dst.isReadOnly()) {
            throw invalid("memcpyDtoH destination is read-only host memory");
        }
    }

    static void hostAllocation(long bytes) {
        if (bytes <= 0) {
            throw invalid("host allocation size must be > 0, got " + bytes);
        }
    }

    /** The operands of a 2D copy apart from its sides' pitches and memory: both given, one on the device, a size. */
    static void memcpy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        if (dst == null || src == null) {
            throw invalid("memcpy2D source or destination is null");
        }
        if (dst instanceof PitchedMemory.Host && src instanceof PitchedMemory.Host) {
            throw invalid(
                    "memcpy2D between two host buffers is no device copy; vgpu copies to, from or within device memory");
        }
        if (widthBytes < 0 || height < 0) {
            throw invalid("memcpy2D width " + widthBytes + " and height " + height + " must be >= 0");
        }
    }

    /** The bytes from a 2D copy's side's first row to the end of its last: its pitch holds a row. */
    static long pitchedExtent(PitchedMemory side, long widthBytes, long height, String role) {
        if (side.pitch() < widthBytes) {
            throw invalid("memcpy2D " + role + " pitch " + side.pitch() + " is smaller than the width " + widthBytes);
        }
        try {
            return height == 0 || widthBytes == 0
                    ? 0
                    : Math.addExact(Math.multiplyExact(side.pitch(), height - 1), widthBytes);
        } catch (ArithmeticException e) {
            throw invalid("memcpy2D " + role + " of " + height + " rows of pitch " + side.pitch() + " is too large");
        }
    }

    /**
     * The 32-bit words from a 2D memset's first row to the end of its last: sizes of at least 0, and
     * a pitch of more than one row that holds a row, 4-byte aligned.
     */
    static long memsetD2D32Words(long pitch, long width, long height, String what) {
        if (width < 0 || height < 0) {
            throw invalid(what + " width " + width + " and height " + height + " must be >= 0");
        }
        try {
            long rowBytes = Math.multiplyExact(width, Integer.BYTES);
            if (height > 1 && (pitch < rowBytes || pitch % Integer.BYTES != 0)) {
                throw invalid(what + " pitch " + pitch + " does not hold a row of " + width
                        + " words, or is not a multiple of 4");
            }
            return width == 0 || height == 0
                    ? 0
                    : Math.addExact(Math.multiplyExact(pitch, height - 1), rowBytes) / Integer.BYTES;
        } catch (ArithmeticException e) {
            throw invalid(what + " of " + height + " rows of pitch " + pitch + " is too large");
        }
    }

    /** A memset's {@code count} elements of {@code elementSize} bytes at {@code dst}, aligned, whose bytes fit a long. */
    static void memset(long dst, int elementSize, long count, String what) {
        count(count);
        if (dst % elementSize != 0) {
            throw invalid(String.format("%s destination 0x%x is not %d-byte aligned", what, dst, elementSize));
        }
        if (count > Long.MAX_VALUE / elementSize) {
            throw invalid(what + " count " + count + " is too large");
        }
    }

    /** A launch's shared memory of at least 0 and a block the device can run. */
    static void launch(Dim3 block, int sharedMemBytes, IntSupplier maxThreadsPerBlock) {
        if (sharedMemBytes < 0) {
            throw invalid("shared memory size must be >= 0, got " + sharedMemBytes);
        }
        if (block.count() > maxThreadsPerBlock.getAsInt()) {
            throw invalid(
                    "block of " + block.count() + " threads exceeds the device's " + maxThreadsPerBlock.getAsInt());
        }
    }

    /**
     * A settable function attribute within its range; {@code optInSharedMemory} bounds the dynamic
     * shared memory, asked of the device only for that attribute.
     */
    static void functionAttribute(
            FunctionAttribute attribute, String function, int value, IntSupplier optInSharedMemory) {
        if (attribute == null || !attribute.settable()) {
            throw invalid("cuFuncSetAttribute: " + attribute + " cannot be set; MAX_DYNAMIC_SHARED_SIZE_BYTES and"
                    + " PREFERRED_SHARED_MEMORY_CARVEOUT can");
        }
        boolean carveout = attribute == FunctionAttribute.PREFERRED_SHARED_MEMORY_CARVEOUT;
        int low = carveout ? -1 : 0;
        int high = carveout ? 100 : optInSharedMemory.getAsInt();
        if (value < low || value > high) {
            throw invalid("cuFuncSetAttribute: " + attribute + " of " + function + " must be within [" + low + ", "
                    + high + "], got " + value);
        }
    }

    private static VgpuException invalid(String message) {
        return new VgpuException(ErrorCode.CUDA_ERROR_INVALID_VALUE, message);
    }
}
