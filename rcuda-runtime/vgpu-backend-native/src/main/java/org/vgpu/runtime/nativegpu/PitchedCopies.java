package org.vgpu.runtime.nativegpu;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import jcuda.driver.CUDA_MEMCPY2D;
import jcuda.driver.CUmemorytype;
import jcuda.driver.JCudaDriver;

import org.vgpu.runtime.api.PitchedMemory;

/**
 * {@code cuMemcpy2D} for a native vGPU: the descriptor built from two pitched sides, with a host side
 * in a Java array staged through native memory. The caller makes the context current.
 */
final class PitchedCopies {
    private PitchedCopies() {}

    /**
     * The driver's own 2D copy: one call, which the copy engine does with the pitches. A host side
     * in a Java array goes through native memory of its extent: the descriptor holds addresses, and
     * an array may move while the driver reads it.
     */
    static void copy2D(PitchedMemory dst, PitchedMemory src, long widthBytes, long height) {
        if (isHeap(dst) || isHeap(src)) {
            try (Arena arena = Arena.ofConfined()) {
                PitchedMemory nativeDst = staged(dst, widthBytes, height, arena);
                copy2D(nativeDst, staged(src, widthBytes, height, arena), widthBytes, height);
                if (dst instanceof PitchedMemory.Host heap && nativeDst instanceof PitchedMemory.Host staging) {
                    MemorySegment.copy(
                            staging.memory(),
                            0,
                            heap.memory(),
                            0,
                            staging.memory().byteSize());
                }
            }
            return;
        }
        CUDA_MEMCPY2D copy = new CUDA_MEMCPY2D();
        copy.WidthInBytes = widthBytes;
        copy.Height = height;
        copy.dstPitch = dst.pitch();
        copy.srcPitch = src.pitch();
        copy.dstMemoryType = memoryType(dst);
        if (dst instanceof PitchedMemory.Device device) {
            copy.dstDevice = JCudaInterop.devicePointer(device.address());
        } else if (dst instanceof PitchedMemory.Host host) {
            copy.dstHost = JCudaInterop.hostPointer(host.memory(), dst.pitch() * (height - 1) + widthBytes);
        }
        copy.srcMemoryType = memoryType(src);
        if (src instanceof PitchedMemory.Device device) {
            copy.srcDevice = JCudaInterop.devicePointer(device.address());
        } else if (src instanceof PitchedMemory.Host host) {
            copy.srcHost = JCudaInterop.hostPointer(host.memory(), src.pitch() * (height - 1) + widthBytes);
        }
        CudaErrors.check(
                JCudaDriver.cuMemcpy2D(copy),
                "cuMemcpy2D(" + widthBytes + " x " + height + " bytes, pitches " + dst.pitch() + " <- " + src.pitch()
                        + ")");
    }

    private static boolean isHeap(PitchedMemory side) {
        return side instanceof PitchedMemory.Host host && !host.memory().isNative();
    }

    /**
     * A heap host side as native memory of its extent holding its bytes (a destination's too: the
     * bytes between its rows come back as they were); other sides as they are.
     */
    private static PitchedMemory staged(PitchedMemory side, long widthBytes, long height, Arena arena) {
        if (!isHeap(side)) {
            return side;
        }
        PitchedMemory.Host heap = (PitchedMemory.Host) side;
        long extent = heap.pitch() * (height - 1) + widthBytes;
        MemorySegment staging = arena.allocate(extent);
        MemorySegment.copy(heap.memory(), 0, staging, 0, extent);
        return new PitchedMemory.Host(staging, heap.pitch());
    }

    private static int memoryType(PitchedMemory side) {
        return side instanceof PitchedMemory.Device
                ? CUmemorytype.CU_MEMORYTYPE_DEVICE
                : CUmemorytype.CU_MEMORYTYPE_HOST;
    }
}
