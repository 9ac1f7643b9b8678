package jcuda.runtime.samples;

import static jcuda.driver.JCudaDriver.*;
import static jcuda.runtime.JCuda.*;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;
import jcudaprograms.Results;

/**
 * Pinned memory with cudaHostAlloc's flags: a portable, write-combined buffer the host only writes (the input, as
 * write-combined memory is meant for), a default one it reads the result from, and the flags each was given asked back
 * with cuMemHostGetFlags. Takes the directory of scale.ptx and, optionally, how often to repeat.
 */
public class JCudaPinnedFlags {
    private static final int N = 1 << 16;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args[0]));
    }

    private static void run(String ptxDirectory) {
        JCuda.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        cudaSetDevice(0);
        long bytes = (long) N * Sizeof.FLOAT;
        Pointer input = new Pointer();
        cudaHostAlloc(input, bytes, cudaHostAllocPortable | cudaHostAllocWriteCombined);
        Pointer output = new Pointer();
        cudaHostAlloc(output, bytes, cudaHostAllocDefault);
        int[] inputFlags = new int[1];
        cuMemHostGetFlags(inputFlags, input);
        boolean asAsked =
                (inputFlags[0] & CU_MEMHOSTALLOC_PORTABLE) != 0 && (inputFlags[0] & CU_MEMHOSTALLOC_WRITECOMBINED) != 0;

        FloatBuffer in =
                input.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
        float[] values = new float[N];
        for (int i = 0; i < N; i++) {
            values[i] = i % 123;
        }
        in.put(values);
        cuInit(0);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, ptxDirectory + "/scale.ptx");
        CUfunction scale = new CUfunction();
        cuModuleGetFunction(scale, module, "scale");
        Pointer data = new Pointer();
        cudaMalloc(data, bytes);
        cudaMemcpy(data, input, bytes, cudaMemcpyKind.cudaMemcpyHostToDevice);
        Pointer parameters = Pointer.to(Pointer.to(data), Pointer.to(new float[] {4.0f}), Pointer.to(new int[] {N}));
        cuLaunchKernel(scale, N / 256, 1, 1, 256, 1, 1, 0, null, parameters, null);
        cudaMemcpy(output, data, bytes, cudaMemcpyKind.cudaMemcpyDeviceToHost);
        float[] result = new float[N];
        output.getByteBuffer(0, bytes)
                .order(ByteOrder.nativeOrder())
                .asFloatBuffer()
                .get(result);

        float[] expected = new float[N];
        for (int i = 0; i < N; i++) {
            expected[i] = values[i] * 4.0f + 1.0f;
        }
        Results.report("pinned memory flags", result, expected, 0f);
        System.out.println("pinned memory flags: portable and write-combined as asked: " + asAsked);
        cudaFree(data);
        cudaFreeHost(input);
        cudaFreeHost(output);
    }
}
