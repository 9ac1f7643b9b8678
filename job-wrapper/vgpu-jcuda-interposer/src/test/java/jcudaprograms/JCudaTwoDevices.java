package jcudaprograms;

import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoad;
import static jcuda.runtime.JCuda.*;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;
import jcuda.runtime.cudaStream_t;

/**
 * Two devices, each adding its half of two vectors: memory, copies, streams and device choice through the runtime
 * API (cudaSetDevice, cudaMalloc, cudaMemcpyAsync), the kernels through the driver API on each device's context.
 */
public class JCudaTwoDevices {
    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        JCuda.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        int[] count = new int[1];
        cudaGetDeviceCount(count);
        if (count[0] < 2) {
            System.out.println("two devices: needs 2 devices, found " + count[0]);
            System.exit(1);
        }
        int n = 1 << 16;
        int half = n / 2;
        float[] a = new float[n];
        float[] b = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = i % 321;
            b[i] = (i % 17) * 0.5f;
        }
        float[] sum = new float[n];
        Pointer[][] buffers = new Pointer[2][3];
        cudaStream_t[] streams = new cudaStream_t[2];
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            cudaFree(new Pointer()); // makes the device's primary context current, for the driver calls
            CUmodule module = new CUmodule();
            cuModuleLoad(module, args[0] + "/vectorAdd.ptx");
            CUfunction add = new CUfunction();
            cuModuleGetFunction(add, module, "add");
            streams[d] = new cudaStream_t();
            cudaStreamCreate(streams[d]);
            for (int k = 0; k < 3; k++) {
                buffers[d][k] = new Pointer();
                cudaMalloc(buffers[d][k], (long) half * Sizeof.FLOAT);
            }
            long offset = (long) d * half * Sizeof.FLOAT;
            cudaMemcpy(
                    buffers[d][0],
                    Pointer.to(a).withByteOffset(offset),
                    (long) half * Sizeof.FLOAT,
                    cudaMemcpyKind.cudaMemcpyHostToDevice);
            cudaMemcpy(
                    buffers[d][1],
                    Pointer.to(b).withByteOffset(offset),
                    (long) half * Sizeof.FLOAT,
                    cudaMemcpyKind.cudaMemcpyHostToDevice);
            Pointer parameters = Pointer.to(
                    Pointer.to(new int[] {half}),
                    Pointer.to(buffers[d][0]),
                    Pointer.to(buffers[d][1]),
                    Pointer.to(buffers[d][2]));
            cuLaunchKernel(add, half / 256, 1, 1, 256, 1, 1, 0, new CUstream(streams[d]), parameters, null);
            cudaMemcpyAsync(
                    Pointer.to(sum).withByteOffset(offset),
                    buffers[d][2],
                    (long) half * Sizeof.FLOAT,
                    cudaMemcpyKind.cudaMemcpyDeviceToHost,
                    streams[d]);
        }
        int[] device = new int[1];
        cudaGetDevice(device);
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            cudaStreamSynchronize(streams[d]);
            cudaDeviceSynchronize();
        }
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            expected[i] = a[i] + b[i];
        }
        Results.report("two devices (last set device " + device[0] + ")", sum, expected, 0f);
        for (int d = 0; d < 2; d++) {
            cudaSetDevice(d);
            for (Pointer buffer : buffers[d]) {
                cudaFree(buffer);
            }
            cudaStreamDestroy(streams[d]);
        }
    }
}
