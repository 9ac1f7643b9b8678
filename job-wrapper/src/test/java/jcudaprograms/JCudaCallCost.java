package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import java.util.Arrays;

import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/**
 * Not one of the eight: what one asynchronous launch (of a kernel with nothing to do) and one synchronous 4 KiB copy
 * to the device cost on device 0, as medians over many, for the GPU script to compare plain JCuda with vgpu's path.
 */
public class JCudaCallCost {
    private static final int BATCHES = 400;
    private static final int LAUNCHES_PER_BATCH = 50;
    private static final int COPIES = 4000;

    public static void main(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/vectorAdd.ptx");
        CUfunction add = new CUfunction();
        cuModuleGetFunction(add, module, "add");
        CUdeviceptr buffer = new CUdeviceptr();
        cuMemAlloc(buffer, 4096);
        Pointer parameters =
                Pointer.to(Pointer.to(new int[] {0}), Pointer.to(buffer), Pointer.to(buffer), Pointer.to(buffer));
        byte[] host = new byte[4096];

        long[] launch = new long[BATCHES];
        for (int b = 0; b < BATCHES; b++) {
            long start = System.nanoTime();
            for (int i = 0; i < LAUNCHES_PER_BATCH; i++) {
                cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, null, parameters, null);
            }
            launch[b] = (System.nanoTime() - start) / LAUNCHES_PER_BATCH;
            cuCtxSynchronize();
        }
        long[] copy = new long[COPIES];
        for (int i = 0; i < COPIES; i++) {
            long start = System.nanoTime();
            cuMemcpyHtoD(buffer, Pointer.to(host), host.length);
            copy[i] = System.nanoTime() - start;
        }
        System.out.println("call cost: launch " + median(launch) + " ns, copy 4 KiB " + median(copy) + " ns");
        cuMemFree(buffer);
        cuCtxDestroy(context);
    }

    private static long median(long[] values) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
