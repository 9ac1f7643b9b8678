package org.vgpu.bench.migration;

import java.util.ArrayList;
import java.util.List;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

import org.vgpu.runtime.nativegpu.CudaErrors;

/**
 * The baseline of the small-allocation figure: what {@code count} plain {@code cuMemAlloc}s of
 * {@code bytes} take of a GPU's memory, by {@code cuMemGetInfo} before and after, in the device's
 * primary context (the one vgpu uses), as a JCuda program allocates.
 */
final class PlainCuMemAlloc {
    private PlainCuMemAlloc() {}

    static long memoryUsed(int ordinal, int count, long bytes) {
        CUdevice device = new CUdevice();
        CUcontext context = new CUcontext();
        CudaErrors.check(JCudaDriver.cuDeviceGet(device, ordinal), "cuDeviceGet");
        CudaErrors.check(JCudaDriver.cuDevicePrimaryCtxRetain(context, device), "cuDevicePrimaryCtxRetain");
        List<CUdeviceptr> allocations = new ArrayList<>(count);
        try {
            CudaErrors.check(JCudaDriver.cuCtxSetCurrent(context), "cuCtxSetCurrent");
            long freeBefore = free();
            for (int i = 0; i < count; i++) {
                CUdeviceptr pointer = new CUdeviceptr();
                CudaErrors.check(JCudaDriver.cuMemAlloc(pointer, bytes), "cuMemAlloc");
                allocations.add(pointer);
            }
            return freeBefore - free();
        } finally {
            for (CUdeviceptr pointer : allocations) {
                JCudaDriver.cuMemFree(pointer);
            }
            JCudaDriver.cuDevicePrimaryCtxRelease(device);
        }
    }

    private static long free() {
        long[] free = new long[1];
        long[] total = new long[1];
        CudaErrors.check(JCudaDriver.cuMemGetInfo(free, total), "cuMemGetInfo");
        return free[0];
    }
}
