package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/** C = A * B with a tiled kernel that stages 16 x 16 tiles in shared memory; a 2-D grid of 2-D blocks. */
public class JCudaMatrixMultiply {
    private static final int TILE = 16;

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
        cuModuleLoad(module, args[0] + "/matMulShared.ptx");
        CUfunction matMul = new CUfunction();
        cuModuleGetFunction(matMul, module, "matMulShared");

        int n = 128;
        float[] a = new float[n * n];
        float[] b = new float[n * n];
        for (int i = 0; i < n * n; i++) {
            a[i] = (i * 7) % 11 - 5;
            b[i] = (i * 3) % 13 - 6;
        }
        long bytes = (long) n * n * Sizeof.FLOAT;
        CUdeviceptr deviceA = new CUdeviceptr();
        CUdeviceptr deviceB = new CUdeviceptr();
        CUdeviceptr deviceC = new CUdeviceptr();
        cuMemAlloc(deviceA, bytes);
        cuMemAlloc(deviceB, bytes);
        cuMemAlloc(deviceC, bytes);
        cuMemcpyHtoD(deviceA, Pointer.to(a), bytes);
        cuMemcpyHtoD(deviceB, Pointer.to(b), bytes);
        cuMemsetD32(deviceC, 0, (long) n * n);

        Pointer parameters =
                Pointer.to(Pointer.to(deviceA), Pointer.to(deviceB), Pointer.to(deviceC), Pointer.to(new int[] {n}));
        cuLaunchKernel(matMul, n / TILE, n / TILE, 1, TILE, TILE, 1, 0, null, parameters, null);
        cuCtxSynchronize();
        float[] c = new float[n * n];
        cuMemcpyDtoH(Pointer.to(c), deviceC, bytes);

        float[] expected = new float[n * n];
        for (int row = 0; row < n; row++) {
            for (int col = 0; col < n; col++) {
                float sum = 0;
                for (int k = 0; k < n; k++) {
                    sum += a[row * n + k] * b[k * n + col];
                }
                expected[row * n + col] = sum;
            }
        }
        Results.report("matrix multiply", c, expected, 0f);
        cuMemFree(deviceA);
        cuMemFree(deviceB);
        cuMemFree(deviceC);
        cuCtxDestroy(context);
    }
}
