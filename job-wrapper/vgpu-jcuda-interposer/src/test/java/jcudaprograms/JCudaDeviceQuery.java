package jcudaprograms;

import static jcuda.driver.JCudaDriver.cuDeviceGet;
import static jcuda.driver.JCudaDriver.cuDeviceGetAttribute;
import static jcuda.driver.JCudaDriver.cuDeviceGetName;
import static jcuda.driver.JCudaDriver.cuDeviceTotalMem;
import static jcuda.driver.JCudaDriver.cuInit;
import static jcuda.driver.JCudaDriver.cuLaunchKernel;
import static jcuda.driver.JCudaDriver.cuModuleGetFunction;
import static jcuda.driver.JCudaDriver.cuModuleLoad;
import static jcuda.runtime.JCuda.*;

import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdevice_attribute;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.JCudaDriver;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaDeviceAttr;
import jcuda.runtime.cudaDeviceProp;
import jcuda.runtime.cudaMemcpyKind;

/**
 * A device query as programs print one before and after their work: the device count, each device's name and figures
 * from cudaGetDeviceProperties, cudaDeviceGetAttribute and the driver's cuDeviceGetName, cuDeviceTotalMem and
 * cuDeviceGetAttribute; in between, a vector add whose host buffers are pinned memory from cudaHostAlloc (portable,
 * write-combined) and cudaMallocHost.
 */
public class JCudaDeviceQuery {
    public static void main(String[] args) {
        Results.repeat(args, () -> run(args));
    }

    static void run(String[] args) {
        JCuda.setExceptionsEnabled(true);
        JCudaDriver.setExceptionsEnabled(true);
        cuInit(0);
        int[] count = new int[1];
        cudaGetDeviceCount(count);
        System.out.println("device query: " + count[0] + " devices");
        for (int d = 0; d < count[0]; d++) {
            describe("before the kernel", d);
        }

        cudaSetDevice(0);
        cudaFree(new Pointer()); // makes the device's primary context current, for the driver calls
        CUmodule module = new CUmodule();
        cuModuleLoad(module, args[0] + "/vectorAdd.ptx");
        CUfunction add = new CUfunction();
        cuModuleGetFunction(add, module, "add");
        int n = 1 << 14;
        long bytes = (long) n * Sizeof.FLOAT;
        Pointer a = new Pointer();
        Pointer b = new Pointer();
        Pointer sum = new Pointer();
        cudaHostAlloc(a, bytes, cudaHostAllocPortable);
        cudaHostAlloc(b, bytes, cudaHostAllocWriteCombined);
        cudaMallocHost(sum, bytes);
        FloatBuffer hostA = floats(a, bytes);
        FloatBuffer hostB = floats(b, bytes);
        float[] expected = new float[n];
        for (int i = 0; i < n; i++) {
            hostA.put(i, i % 113);
            hostB.put(i, (i % 7) * 0.5f);
            expected[i] = (i % 113) + (i % 7) * 0.5f;
        }
        Pointer[] device = new Pointer[3];
        for (int k = 0; k < 3; k++) {
            device[k] = new Pointer();
            cudaMalloc(device[k], bytes);
        }
        cudaMemcpy(device[0], a, bytes, cudaMemcpyKind.cudaMemcpyHostToDevice);
        cudaMemcpy(device[1], b, bytes, cudaMemcpyKind.cudaMemcpyHostToDevice);
        Pointer parameters = Pointer.to(
                Pointer.to(new int[] {n}), Pointer.to(device[0]), Pointer.to(device[1]), Pointer.to(device[2]));
        cuLaunchKernel(add, n / 256, 1, 1, 256, 1, 1, 0, null, parameters, null);
        cudaDeviceSynchronize();
        cudaMemcpy(sum, device[2], bytes, cudaMemcpyKind.cudaMemcpyDeviceToHost);
        float[] result = new float[n];
        floats(sum, bytes).get(0, result);
        Results.report("vector add in pinned memory", result, expected, 0f);
        for (Pointer buffer : device) {
            cudaFree(buffer);
        }
        cudaFreeHost(a);
        cudaFreeHost(b);
        cudaFreeHost(sum);

        for (int d = 0; d < count[0]; d++) {
            describe("after the kernel", d);
        }
    }

    private static FloatBuffer floats(Pointer pinned, long bytes) {
        return pinned.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
    }

    private static void describe(String when, int d) {
        cudaDeviceProp properties = new cudaDeviceProp();
        cudaGetDeviceProperties(properties, d);
        int[] pitch = new int[1];
        cudaDeviceGetAttribute(pitch, cudaDeviceAttr.cudaDevAttrMaxPitch, d);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, d);
        byte[] name = new byte[256];
        cuDeviceGetName(name, name.length, device);
        long[] total = new long[1];
        cuDeviceTotalMem(total, device);
        int[] registersPerSm = new int[1];
        cuDeviceGetAttribute(
                registersPerSm, CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, device);
        String driverName = text(name);
        String runtimeName = text(properties.name);
        System.out.printf(
                "%s, device %d: %s, compute %d.%d, %d MiB, %d SMs, %d threads per block (%d x %d x %d), warp %d, "
                        + "%d B shared per block, %d registers per SM, max pitch %d B, L2 %d B, bus %d bits; "
                        + "driver and runtime agree: %s%n",
                when,
                d,
                runtimeName,
                properties.major,
                properties.minor,
                properties.totalGlobalMem >> 20,
                properties.multiProcessorCount,
                properties.maxThreadsPerBlock,
                properties.maxThreadsDim[0],
                properties.maxThreadsDim[1],
                properties.maxThreadsDim[2],
                properties.warpSize,
                properties.sharedMemPerBlock,
                registersPerSm[0],
                pitch[0],
                properties.l2CacheSize,
                properties.memoryBusWidth,
                driverName.equals(runtimeName)
                                && total[0] == properties.totalGlobalMem
                                && pitch[0] == properties.memPitch
                        ? "yes"
                        : "NO");
    }

    /** A NUL-terminated name. */
    private static String text(byte[] bytes) {
        int end = 0;
        while (end < bytes.length && bytes[end] != 0) {
            end++;
        }
        return new String(bytes, 0, end, StandardCharsets.US_ASCII);
    }
}
