package jcudaprograms;

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

/** A kernel compiled at run time with NVRTC from a source string, as JCuda's JNvrtcVectorAdd sample does. */
public class JCudaNvrtc {
    private static final String SOURCE = """
            extern "C"
            __global__ void saxpyRtc(float a, float *x, float *y, int n)
            {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n)
                {
                    y[i] = a * x[i] + y[i];
                }
            }
            """;

    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        JNvrtc.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        nvrtcProgram program = new nvrtcProgram();
        nvrtcCreateProgram(program, SOURCE, "saxpy.cu", 0, null, null);
        nvrtcCompileProgram(program, 0, null);
        String[] log = new String[1];
        nvrtcGetProgramLog(program, log);
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
        CUfunction saxpy = new CUfunction();
        cuModuleGetFunction(saxpy, module, "saxpyRtc");

        int n = 50_000;
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = i % 100;
            y[i] = 1000 - i % 50;
        }
        CUdeviceptr deviceX = new CUdeviceptr();
        CUdeviceptr deviceY = new CUdeviceptr();
        cuMemAlloc(deviceX, (long) n * Sizeof.FLOAT);
        cuMemAlloc(deviceY, (long) n * Sizeof.FLOAT);
        cuMemcpyHtoD(deviceX, Pointer.to(x), (long) n * Sizeof.FLOAT);
        cuMemcpyHtoD(deviceY, Pointer.to(y), (long) n * Sizeof.FLOAT);
        Pointer parameters = Pointer.to(
                Pointer.to(new float[] {3.0f}), Pointer.to(deviceX), Pointer.to(deviceY), Pointer.to(new int[] {n}));
        cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, null, parameters, null);
        cuCtxSynchronize();
        float[] result = new float[n];
        cuMemcpyDtoH(Pointer.to(result), deviceY, (long) n * Sizeof.FLOAT);
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            expected[i] = 3.0f * x[i] + y[i];
        }
        Results.report("NVRTC saxpy", result, expected, 0f);
        cuMemFree(deviceX);
        cuMemFree(deviceY);
        cuCtxDestroy(context);
    }
}
