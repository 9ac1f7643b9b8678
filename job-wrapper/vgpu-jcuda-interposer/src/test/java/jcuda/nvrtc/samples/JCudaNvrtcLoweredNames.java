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
 * Kernels of C++ linkage compiled with NVRTC, found by their lowered names: a box filter templated on its radius,
 * instantiated for radii 1 and 2, and a plain C++ kernel, named by the expressions {@code boxFilter<1>}, {@code
 * boxFilter<2>} and {@code &negate}. Takes a directory (unused) and, optionally, how often to repeat.
 */
public class JCudaNvrtcLoweredNames {
    private static final String SOURCE = """
            template<int RADIUS>
            __global__ void boxFilter(const float *in, float *out, int n)
            {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n)
                {
                    float sum = 0.0f;
                    for (int d = -RADIUS; d <= RADIUS; d++)
                    {
                        int j = min(max(i + d, 0), n - 1);
                        sum += in[j];
                    }
                    out[i] = sum / (2 * RADIUS + 1);
                }
            }

            __global__ void negate(float *data, int n)
            {
                int i = blockIdx.x * blockDim.x + threadIdx.x;
                if (i < n)
                {
                    data[i] = -data[i];
                }
            }
            """;
    private static final String[] EXPRESSIONS = {"boxFilter<1>", "boxFilter<2>", "&negate"};
    private static final int N = 30_000;

    public static void main(String[] args) {
        Results.repeat(args, JCudaNvrtcLoweredNames::run);
    }

    private static void run() {
        JNvrtc.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        nvrtcProgram program = new nvrtcProgram();
        nvrtcCreateProgram(program, SOURCE, "filters.cu", 0, null, null);
        for (String expression : EXPRESSIONS) {
            nvrtcAddNameExpression(program, expression);
        }
        nvrtcCompileProgram(program, 0, null);
        String[] lowered = new String[EXPRESSIONS.length];
        for (int k = 0; k < EXPRESSIONS.length; k++) {
            String[] name = new String[1];
            nvrtcGetLoweredName(program, EXPRESSIONS[k], name);
            lowered[k] = name[0];
        }
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
        CUfunction[] kernels = new CUfunction[EXPRESSIONS.length];
        for (int k = 0; k < kernels.length; k++) {
            kernels[k] = new CUfunction();
            cuModuleGetFunction(kernels[k], module, lowered[k]);
        }

        float[] input = new float[N];
        for (int i = 0; i < N; i++) {
            input[i] = (i * 37) % 101;
        }
        long bytes = (long) N * Sizeof.FLOAT;
        CUdeviceptr in = new CUdeviceptr();
        CUdeviceptr out = new CUdeviceptr();
        cuMemAlloc(in, bytes);
        cuMemAlloc(out, bytes);
        cuMemcpyHtoD(in, Pointer.to(input), bytes);
        for (int radius = 1; radius <= 2; radius++) {
            launch(kernels[radius - 1], Pointer.to(Pointer.to(in), Pointer.to(out), Pointer.to(new int[] {N})));
            launch(kernels[2], Pointer.to(Pointer.to(out), Pointer.to(new int[] {N})));
            float[] result = new float[N];
            cuMemcpyDtoH(Pointer.to(result), out, bytes);
            float[] expected = new float[N];
            for (int i = 0; i < N; i++) {
                float sum = 0.0f;
                for (int d = -radius; d <= radius; d++) {
                    sum += input[Math.min(Math.max(i + d, 0), N - 1)];
                }
                expected[i] = -(sum / (2 * radius + 1));
            }
            Results.report("NVRTC lowered names, box filter of radius " + radius + " negated", result, expected, 1e-6f);
        }
        cuMemFree(in);
        cuMemFree(out);
        cuCtxDestroy(context);
    }

    private static void launch(CUfunction kernel, Pointer parameters) {
        cuLaunchKernel(kernel, (N + 255) / 256, 1, 1, 256, 1, 1, 0, null, parameters, null);
        cuCtxSynchronize();
    }
}
