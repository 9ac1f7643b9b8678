package jcudaprograms;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/** A two-pass sum reduction: per-block partial sums in shared memory, then one block sums the partials. */
public class JCudaReduction {
    private static final int THREADS = 256;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        JCudaDriver.setExceptionsEnabled(true);
        JCudaDriver.cuInit(0);
        CUdevice device = new CUdevice();
        JCudaDriver.cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        JCudaDriver.cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        JCudaDriver.cuModuleLoad(module, args[0] + "/reduction.ptx");
        CUfunction reduce = new CUfunction();
        JCudaDriver.cuModuleGetFunction(reduce, module, "reducePartial");

        int n = 1 << 18;
        float[] input = new float[n];
        double expected = 0;
        for (int i = 0; i < n; i++) {
            input[i] = i % 7; // small integers: every partial sum is exact in float
            expected += input[i];
        }
        CUdeviceptr deviceInput = new CUdeviceptr();
        JCudaDriver.cuMemAlloc(deviceInput, (long) n * Sizeof.FLOAT);
        JCudaDriver.cuMemcpyHtoD(deviceInput, Pointer.to(input), (long) n * Sizeof.FLOAT);
        int blocks = (n + THREADS * 2 - 1) / (THREADS * 2);
        CUdeviceptr partials = new CUdeviceptr();
        JCudaDriver.cuMemAlloc(partials, (long) blocks * Sizeof.FLOAT);
        CUdeviceptr total = new CUdeviceptr();
        JCudaDriver.cuMemAlloc(total, Sizeof.FLOAT);

        // pass 1: one partial sum per block
        JCudaDriver.cuLaunchKernel(
                reduce,
                blocks,
                1,
                1,
                THREADS,
                1,
                1,
                THREADS * Sizeof.FLOAT,
                null,
                Pointer.to(Pointer.to(deviceInput), Pointer.to(partials), Pointer.to(new int[] {n})),
                null);
        // pass 2: one block sums the partials (blocks <= 2 * THREADS here)
        JCudaDriver.cuLaunchKernel(
                reduce,
                1,
                1,
                1,
                THREADS,
                1,
                1,
                THREADS * Sizeof.FLOAT,
                null,
                Pointer.to(Pointer.to(partials), Pointer.to(total), Pointer.to(new int[] {blocks})),
                null);
        JCudaDriver.cuCtxSynchronize();

        float[] sum = new float[1];
        JCudaDriver.cuMemcpyDtoH(Pointer.to(sum), total, Sizeof.FLOAT);
        Results.report("reduction", sum, new float[] {(float) expected}, 0f);
        System.out.println("reduction: sum " + sum[0] + " of " + n + " values in " + blocks + " blocks");

        JCudaDriver.cuMemFree(deviceInput);
        JCudaDriver.cuMemFree(partials);
        JCudaDriver.cuMemFree(total);
        JCudaDriver.cuModuleUnload(module);
        JCudaDriver.cuCtxDestroy(context);
    }
}
