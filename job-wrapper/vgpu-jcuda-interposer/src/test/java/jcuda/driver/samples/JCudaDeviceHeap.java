package jcuda.driver.samples;

import static jcuda.driver.JCudaDriver.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUlimit;
import jcuda.driver.CUmodule;
import jcudaprograms.Results;

/**
 * A kernel that allocates on the device (malloc in the kernel) after the program sized the device heap and the printf
 * FIFO with cuCtxSetLimit once, before any kernel ran (CUDA takes the heap's size only then), reading them back with
 * cuCtxGetLimit after each launch. Takes the directory of heapScratch.ptx and, optionally, how often to repeat.
 */
public class JCudaDeviceHeap {
    private static final long HEAP = 64L << 20;
    private static final long FIFO = 2L << 20;
    private static final int N = 1 << 16;

    public static void main(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        cuCtxSetLimit(CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE, HEAP);
        cuCtxSetLimit(CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE, FIFO);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/heapScratch.ptx");
        CUfunction heapScratch = new CUfunction();
        cuModuleGetFunction(heapScratch, module, "heapScratch");
        Results.repeat(args, () -> run(heapScratch));
        cuCtxDestroy(context);
    }

    private static void run(CUfunction heapScratch) {

        float[] input = new float[N];
        for (int i = 0; i < N; i++) {
            input[i] = i % 777;
        }
        long bytes = (long) N * Sizeof.FLOAT;
        CUdeviceptr in = new CUdeviceptr();
        CUdeviceptr out = new CUdeviceptr();
        cuMemAlloc(in, bytes);
        cuMemAlloc(out, bytes);
        cuMemcpyHtoD(in, Pointer.to(input), bytes);
        Pointer parameters = Pointer.to(Pointer.to(in), Pointer.to(out), Pointer.to(new int[] {N}));
        cuLaunchKernel(heapScratch, N / 128, 1, 1, 128, 1, 1, 0, null, parameters, null);
        cuCtxSynchronize();
        float[] result = new float[N];
        cuMemcpyDtoH(Pointer.to(result), out, bytes);
        long[] heap = new long[1];
        long[] fifo = new long[1];
        cuCtxGetLimit(heap, CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE);
        cuCtxGetLimit(fifo, CUlimit.CU_LIMIT_PRINTF_FIFO_SIZE);

        float[] expected = new float[N];
        for (int i = 0; i < N; i++) {
            expected[i] = input[i] * 2.0f + 1.0f;
        }
        Results.report("device heap", result, expected, 0f);
        System.out.println("device heap: malloc heap at least 64 MiB: " + (heap[0] >= HEAP)
                + ", printf FIFO at least 2 MiB: " + (fifo[0] >= FIFO));
        cuMemFree(in);
        cuMemFree(out);
    }
}
