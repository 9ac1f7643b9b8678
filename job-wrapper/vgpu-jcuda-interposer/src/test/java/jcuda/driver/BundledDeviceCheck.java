package jcuda.driver;

import static jcuda.driver.JCudaDriver.*;

import java.util.Arrays;

import jcuda.Pointer;
import jcuda.Sizeof;

/**
 * A program whose class sits in one of JCuda's own packages ({@code jcuda.driver}), as a program shipped in one jar
 * with JCuda may: it counts the devices it sees and sends a buffer to the last one and back, printing the
 * device pointer it got.
 */
public class BundledDeviceCheck {
    public static void main(String[] args) {
        setExceptionsEnabled(true);
        cuInit(0);
        int[] count = new int[1];
        cuDeviceGetCount(count);
        System.out.println("devices: " + count[0]);
        CUdevice last = new CUdevice();
        cuDeviceGet(last, count[0] - 1);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, last);
        int n = 1024;
        int[] data = new int[n];
        Arrays.setAll(data, i -> i * 7);
        CUdeviceptr buffer = new CUdeviceptr();
        cuMemAlloc(buffer, (long) n * Sizeof.INT);
        cuMemcpyHtoD(buffer, Pointer.to(data), (long) n * Sizeof.INT);
        int[] back = new int[n];
        cuMemcpyDtoH(Pointer.to(back), buffer, (long) n * Sizeof.INT);
        System.out.println("device " + (count[0] - 1) + " allocated " + buffer);
        System.out.println(
                "bundled round trip: " + (Arrays.equals(data, back) ? "PASSED" : "FAILED") + ", " + n + " values");
        cuMemFree(buffer);
        cuCtxDestroy(context);
    }
}
