package jcudaprograms;

import static jcuda.driver.JCudaDriver.cuCtxCreate;
import static jcuda.driver.JCudaDriver.cuCtxDestroy;
import static jcuda.driver.JCudaDriver.cuCtxSynchronize;
import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoad;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;

/** JCuda's JCudaVectorAdd sample, as JCuda users start from it: a + b on device 0. */
public class JCudaVectorAdd {
    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        JCudaDriver.setExceptionsEnabled(true);
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);

        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/vectorAdd.ptx");
        CUfunction function = new CUfunction();
        cuModuleGetFunction(function, module, "add");

        int numElements = 100_000;
        float[] hostInputA = new float[numElements];
        float[] hostInputB = new float[numElements];
        for (int i = 0; i < numElements; i++) {
            hostInputA[i] = i;
            hostInputB[i] = i * 0.25f;
        }
        CUdeviceptr deviceInputA = new CUdeviceptr();
        cuMemAlloc(deviceInputA, (long) numElements * Sizeof.FLOAT);
        cuMemcpyHtoD(deviceInputA, Pointer.to(hostInputA), (long) numElements * Sizeof.FLOAT);
        CUdeviceptr deviceInputB = new CUdeviceptr();
        cuMemAlloc(deviceInputB, (long) numElements * Sizeof.FLOAT);
        cuMemcpyHtoD(deviceInputB, Pointer.to(hostInputB), (long) numElements * Sizeof.FLOAT);
        CUdeviceptr deviceOutput = new CUdeviceptr();
        cuMemAlloc(deviceOutput, (long) numElements * Sizeof.FLOAT);

        Pointer kernelParameters = Pointer.to(
                Pointer.to(new int[] {numElements}),
                Pointer.to(deviceInputA),
                Pointer.to(deviceInputB),
                Pointer.to(deviceOutput));
        int blockSizeX = 256;
        int gridSizeX = (int) Math.ceil((double) numElements / blockSizeX);
        cuLaunchKernel(function, gridSizeX, 1, 1, blockSizeX, 1, 1, 0, null, kernelParameters, null);
        cuCtxSynchronize();

        float[] hostOutput = new float[numElements];
        cuMemcpyDtoH(Pointer.to(hostOutput), deviceOutput, (long) numElements * Sizeof.FLOAT);
        float[] expected = new float[numElements];
        for (int i = 0; i < numElements; i++) {
            expected[i] = hostInputA[i] + hostInputB[i];
        }
        Results.report("vector add", hostOutput, expected, 0f);

        cuMemFree(deviceInputA);
        cuMemFree(deviceInputB);
        cuMemFree(deviceOutput);
        cuCtxDestroy(context);
    }
}
