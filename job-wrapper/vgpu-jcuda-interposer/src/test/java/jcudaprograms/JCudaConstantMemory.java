package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/** A cubic polynomial whose coefficients live in __constant__ memory, found with cuModuleGetGlobal and set twice. */
public class JCudaConstantMemory {
    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/polynomial.ptx");
        CUfunction polynomial = new CUfunction();
        cuModuleGetFunction(polynomial, module, "polynomial");
        CUdeviceptr coefficients = new CUdeviceptr();
        long[] coefficientBytes = new long[1];
        cuModuleGetGlobal(coefficients, coefficientBytes, module, "coefficients");

        int n = 4096;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (i % 64) / 8.0f - 4.0f;
        }
        CUdeviceptr deviceX = new CUdeviceptr();
        CUdeviceptr deviceY = new CUdeviceptr();
        cuMemAlloc(deviceX, (long) n * Sizeof.FLOAT);
        cuMemAlloc(deviceY, (long) n * Sizeof.FLOAT);
        cuMemcpyHtoD(deviceX, Pointer.to(x), (long) n * Sizeof.FLOAT);
        Pointer parameters = Pointer.to(Pointer.to(deviceX), Pointer.to(deviceY), Pointer.to(new int[] {n}));

        float[][] sets = {{1, 2, 0.5f, -0.25f}, {-3, 0, 1.5f, 0.125f}};
        for (float[] c : sets) {
            cuMemcpyHtoD(coefficients, Pointer.to(c), coefficientBytes[0]);
            cuLaunchKernel(polynomial, n / 128, 1, 1, 128, 1, 1, 0, null, parameters, null);
            cuCtxSynchronize();
            float[] y = new float[n];
            cuMemcpyDtoH(Pointer.to(y), deviceY, (long) n * Sizeof.FLOAT);
            float[] expected = new float[n];
            for (int i = 0; i < n; i++) {
                expected[i] = c[0] + x[i] * (c[1] + x[i] * (c[2] + x[i] * c[3]));
            }
            Results.report("constant memory (" + coefficientBytes[0] + " B of coefficients)", y, expected, 1e-5f);
        }
        cuMemFree(deviceX);
        cuMemFree(deviceY);
        cuCtxDestroy(context);
    }
}
