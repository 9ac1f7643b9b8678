package jcuda.nvrtc.samples;

import static jcuda.driver.JCudaDriver.*;
import static jcuda.nvrtc.JNvrtc.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;
import jcuda.nvrtc.JNvrtc;
import jcuda.nvrtc.nvrtcProgram;
import jcudaprograms.Results;

/**
 * A kernel template compiled with NVRTC for two types: the program adds a name expression for each instantiation
 * before the compile and looks each kernel up by its lowered name after it. Takes a directory (unused) and,
 * optionally, how often to repeat.
 */
public class JCudaNvrtcTemplates {
    private static final String SOURCE = """
            template<typename T>
            __global__ void axpyT(T a, T *x, T *y, int n)
            {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n)
                {
                    y[i] = a * x[i] + y[i];
                }
            }
            """;
    private static final int N = 40_000;

    public static void main(String[] args) {
        Results.repeat(args, JCudaNvrtcTemplates::run);
    }

    private static void run() {
        JNvrtc.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        nvrtcProgram program = new nvrtcProgram();
        nvrtcCreateProgram(program, SOURCE, "axpy.cu", 0, null, null);
        nvrtcAddNameExpression(program, "axpyT<float>");
        nvrtcAddNameExpression(program, "axpyT<int>");
        nvrtcCompileProgram(program, 0, null);
        String[] floatName = new String[1];
        String[] intName = new String[1];
        nvrtcGetLoweredName(program, "axpyT<float>", floatName);
        nvrtcGetLoweredName(program, "axpyT<int>", intName);
        String[] ptx = new String[1];
        nvrtcGetPTX(program, ptx);
        nvrtcDestroyProgram(program);

        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoadData(module, ptx[0]);
        CUfunction floatAxpy = new CUfunction();
        cuModuleGetFunction(floatAxpy, module, floatName[0]);
        CUfunction intAxpy = new CUfunction();
        cuModuleGetFunction(intAxpy, module, intName[0]);

        float[] x = new float[N];
        float[] y = new float[N];
        int[] xi = new int[N];
        int[] yi = new int[N];
        for (int i = 0; i < N; i++) {
            x[i] = (i % 100) * 0.25f;
            y[i] = 500 - i % 70;
            xi[i] = i % 1000;
            yi[i] = -(i % 33);
        }
        long bytes = (long) N * Sizeof.FLOAT;
        CUdeviceptr[] buffers = {new CUdeviceptr(), new CUdeviceptr(), new CUdeviceptr(), new CUdeviceptr()};
        for (CUdeviceptr buffer : buffers) {
            cuMemAlloc(buffer, bytes);
        }
        cuMemcpyHtoD(buffers[0], Pointer.to(x), bytes);
        cuMemcpyHtoD(buffers[1], Pointer.to(y), bytes);
        cuMemcpyHtoD(buffers[2], Pointer.to(xi), bytes);
        cuMemcpyHtoD(buffers[3], Pointer.to(yi), bytes);
        cuLaunchKernel(
                floatAxpy,
                (N + 255) / 256,
                1,
                1,
                256,
                1,
                1,
                0,
                null,
                Pointer.to(
                        Pointer.to(new float[] {1.5f}),
                        Pointer.to(buffers[0]),
                        Pointer.to(buffers[1]),
                        Pointer.to(new int[] {N})),
                null);
        cuLaunchKernel(
                intAxpy,
                (N + 255) / 256,
                1,
                1,
                256,
                1,
                1,
                0,
                null,
                Pointer.to(
                        Pointer.to(new int[] {7}),
                        Pointer.to(buffers[2]),
                        Pointer.to(buffers[3]),
                        Pointer.to(new int[] {N})),
                null);
        cuCtxSynchronize();
        float[] result = new float[N];
        int[] intResult = new int[N];
        cuMemcpyDtoH(Pointer.to(result), buffers[1], bytes);
        cuMemcpyDtoH(Pointer.to(intResult), buffers[3], bytes);

        float[] expected = new float[N];
        boolean intsRight = true;
        for (int i = 0; i < N; i++) {
            expected[i] = 1.5f * x[i] + y[i];
            intsRight &= intResult[i] == 7 * xi[i] + yi[i];
        }
        Results.report("NVRTC template axpyT<float>", result, expected, 1e-6f);
        System.out.println("NVRTC template axpyT<int>: " + (intsRight ? "PASSED" : "FAILED") + ", " + N + " values");
        for (CUdeviceptr buffer : buffers) {
            cuMemFree(buffer);
        }
        cuCtxDestroy(context);
    }
}
