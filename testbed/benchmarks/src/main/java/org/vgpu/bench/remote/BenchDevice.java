package org.vgpu.bench.remote;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.vgpu.runtime.api.Dim3;
import org.vgpu.runtime.api.FunctionHandle;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.StreamHandle;
import org.vgpu.runtime.api.VirtualGpu;
import org.vgpu.runtime.kernels.TestKernels;

/**
 * The same operations on the local and on the remote vGPU: copies from and into the vGPU's page-locked memory
 * ({@link VirtualGpu#memAllocHost}), and from and into plain native memory of this process, as an app's own
 * buffers are.
 */
final class BenchDevice {
    private static final Dim3 ONE = Dim3.of(1);

    private final VirtualGpu gpu;
    private final FunctionHandle empty;
    private final long bytes;
    private final long deviceBuffer;
    private final MemorySegment pinned;
    private final Arena ownMemory = Arena.ofShared();
    private final MemorySegment pageable;

    BenchDevice(VirtualGpu gpu, long bytes) {
        this.gpu = gpu;
        this.bytes = bytes;
        this.empty = gpu.moduleGetFunction(gpu.moduleLoadData(TestKernels.ptx()), TestKernels.EMPTY_KERNEL);
        this.deviceBuffer = gpu.memAlloc(bytes);
        this.pinned = gpu.memAllocHost(bytes);
        this.pageable = ownMemory.allocate(bytes, 64);
        // touched once, so that no trial pays for the first write to a page
        pinned.fill((byte) 1);
        pageable.fill((byte) 1);
    }

    double launchAndSynchronizeNanos(int iterations) {
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            gpu.launchKernel(empty, ONE, ONE, 0, StreamHandle.DEFAULT, KernelArgs.none());
            gpu.ctxSynchronize();
        }
        return (double) (System.nanoTime() - start) / iterations;
    }

    double asyncLaunchNanos(int iterations) {
        long start = System.nanoTime();
        for (int i = 0; i < iterations; i++) {
            gpu.launchKernel(empty, ONE, ONE, 0, StreamHandle.DEFAULT, KernelArgs.none());
        }
        gpu.ctxSynchronize();
        return (double) (System.nanoTime() - start) / iterations;
    }

    /** The vGPU's page-locked memory, or this process's own ({@code pinned} false). */
    private MemorySegment host(boolean fromPinned) {
        return fromPinned ? pinned : pageable;
    }

    double copyToDeviceNanos(boolean fromPinned) {
        MemorySegment host = host(fromPinned);
        long start = System.nanoTime();
        gpu.memcpyHtoD(deviceBuffer, host, bytes);
        return System.nanoTime() - start;
    }

    double copyToHostNanos(boolean intoPinned) {
        MemorySegment host = host(intoPinned);
        long start = System.nanoTime();
        gpu.memcpyDtoH(host, deviceBuffer, bytes);
        return System.nanoTime() - start;
    }

    void free() {
        gpu.memFreeHost(pinned);
        gpu.memFree(deviceBuffer);
        ownMemory.close();
    }
}
