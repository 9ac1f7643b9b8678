package jcuda.runtime.samples;

import static jcuda.driver.JCudaDriver.*;
import static jcuda.runtime.JCuda.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaLimit;
import jcuda.runtime.cudaMemcpyKind;
import jcudaprograms.Results;

/**
 * The runtime API's limits: the device heap, the printf FIFO and the stack, set with cudaDeviceSetLimit once, before
 * any kernel ran, and read with cudaDeviceGetLimit after each launch (the values the device took, which a move to
 * another GPU keeps). Takes the directory of heapScratch.ptx and, optionally, how often to repeat.
 */
public class JCudaRuntimeLimits {
    private static final int N = 1 << 15;
    private static final int LAUNCHES = 4;

    public static void main(String[] args) {
        JCuda.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        cudaSetDevice(0);
        cudaFree(new Pointer());
        cudaDeviceSetLimit(cudaLimit.cudaLimitMallocHeapSize, 32L << 20);
        cudaDeviceSetLimit(cudaLimit.cudaLimitPrintfFifoSize, 3L << 20);
        cudaDeviceSetLimit(cudaLimit.cudaLimitStackSize, 4096);
        cuInit(0);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/heapScratch.ptx");
        CUfunction heapScratch = new CUfunction();
        cuModuleGetFunction(heapScratch, module, "heapScratch");
        Results.repeat(args, () -> run(heapScratch));
        cudaDeviceReset();
    }

    private static void run(CUfunction heapScratch) {

        float[] values = new float[N];
        for (int i = 0; i < N; i++) {
            values[i] = (i % 19) * 0.5f;
        }
        long bytes = (long) N * Sizeof.FLOAT;
        Pointer a = new Pointer();
        Pointer b = new Pointer();
        cudaMalloc(a, bytes);
        cudaMalloc(b, bytes);
        cudaMemcpy(a, Pointer.to(values), bytes, cudaMemcpyKind.cudaMemcpyHostToDevice);
        StringBuilder limits = new StringBuilder();
        for (int launch = 0; launch < LAUNCHES; launch++) {
            Pointer in = launch % 2 == 0 ? a : b;
            Pointer out = launch % 2 == 0 ? b : a;
            Pointer parameters = Pointer.to(Pointer.to(in), Pointer.to(out), Pointer.to(new int[] {N}));
            cuLaunchKernel(heapScratch, N / 256, 1, 1, 256, 1, 1, 0, null, parameters, null);
            cudaDeviceSynchronize();
            long[] heap = new long[1];
            long[] fifo = new long[1];
            long[] stack = new long[1];
            cudaDeviceGetLimit(heap, cudaLimit.cudaLimitMallocHeapSize);
            cudaDeviceGetLimit(fifo, cudaLimit.cudaLimitPrintfFifoSize);
            cudaDeviceGetLimit(stack, cudaLimit.cudaLimitStackSize);
            limits.append(launch == 0 ? "" : "; ")
                    .append(heap[0])
                    .append(' ')
                    .append(fifo[0])
                    .append(' ')
                    .append(stack[0]);
        }
        float[] result = new float[N];
        cudaMemcpy(Pointer.to(result), a, bytes, cudaMemcpyKind.cudaMemcpyDeviceToHost);

        float[] expected = values.clone();
        for (int launch = 0; launch < LAUNCHES; launch++) {
            for (int i = 0; i < N; i++) {
                expected[i] = expected[i] * 2.0f + 1.0f;
            }
        }
        Results.report("runtime limits", result, expected, 0f);
        System.out.println("runtime limits: heap, printf FIFO and stack after each launch: " + limits);
        cudaFree(a);
        cudaFree(b);
    }
}
