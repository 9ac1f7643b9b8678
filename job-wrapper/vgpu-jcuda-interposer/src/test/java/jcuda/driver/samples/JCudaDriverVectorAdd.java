package jcuda.driver.samples;

import static jcuda.driver.JCudaDriver.*;

import java.util.Arrays;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;

/**
 * A driver API program in a package named as JCuda's own samples are: it lists the devices it sees, then adds two
 * vectors on device 0. Takes the directory of vectorAdd.ptx and, optionally, how often to repeat the addition.
 */
public class JCudaDriverVectorAdd {
    public static void main(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        int[] count = new int[1];
        cuDeviceGetCount(count);
        for (int i = 0; i < count[0]; i++) {
            CUdevice device = new CUdevice();
            cuDeviceGet(device, i);
            byte[] name = new byte[256];
            cuDeviceGetName(name, name.length, device);
            System.out.println("device " + i + ": " + new String(name, 0, length(name)));
        }
        int times = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        for (int i = 0; i < times; i++) {
            add(args[0]);
        }
    }

    private static void add(String ptxDirectory) {
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUmodule module = new CUmodule();
        cuModuleLoad(module, ptxDirectory + "/vectorAdd.ptx");
        CUfunction function = new CUfunction();
        cuModuleGetFunction(function, module, "add");

        int n = 50_000;
        float[] a = new float[n];
        float[] b = new float[n];
        for (int i = 0; i < n; i++) {
            a[i] = i % 1000;
            b[i] = (i % 7) * 0.5f;
        }
        long bytes = (long) n * Sizeof.FLOAT;
        CUdeviceptr deviceA = new CUdeviceptr();
        CUdeviceptr deviceB = new CUdeviceptr();
        CUdeviceptr deviceSum = new CUdeviceptr();
        cuMemAlloc(deviceA, bytes);
        cuMemAlloc(deviceB, bytes);
        cuMemAlloc(deviceSum, bytes);
        cuMemcpyHtoD(deviceA, Pointer.to(a), bytes);
        cuMemcpyHtoD(deviceB, Pointer.to(b), bytes);
        Pointer parameters =
                Pointer.to(Pointer.to(new int[] {n}), Pointer.to(deviceA), Pointer.to(deviceB), Pointer.to(deviceSum));
        cuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, null, parameters, null);
        cuCtxSynchronize();
        float[] sum = new float[n];
        cuMemcpyDtoH(Pointer.to(sum), deviceSum, bytes);
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            if (sum[i] != a[i] + b[i]) {
                wrong++;
            }
        }
        System.out.printf(
                "driver vector add: %s, %d values, result hash %08x%n",
                wrong == 0 ? "PASSED" : "FAILED (" + wrong + " values differ from the CPU's)", n, Arrays.hashCode(sum));
        cuMemFree(deviceA);
        cuMemFree(deviceB);
        cuMemFree(deviceSum);
        cuCtxDestroy(context);
    }

    private static int length(byte[] text) {
        int length = 0;
        while (length < text.length && text[length] != 0) {
            length++;
        }
        return length;
    }
}
