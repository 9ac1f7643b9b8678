package jcuda.runtime.samples;

import static jcuda.runtime.JCuda.*;

import java.util.Arrays;

import jcuda.Pointer;
import jcuda.Sizeof;
import jcuda.runtime.JCuda;
import jcuda.runtime.cudaMemcpyKind;

/**
 * A runtime API program in a package named as JCuda's own samples are: on the last device, host to device, a memset
 * of the first half, device to device and back to the host.
 */
public class JCudaRuntimeRoundTrip {
    public static void main(String[] args) {
        JCuda.setExceptionsEnabled(true);
        int[] count = new int[1];
        cudaGetDeviceCount(count);
        int device = count[0] - 1;
        cudaSetDevice(device);
        int n = 4096;
        long bytes = (long) n * Sizeof.INT;
        int[] data = new int[n];
        Arrays.setAll(data, i -> i * 3);
        Pointer first = new Pointer();
        Pointer second = new Pointer();
        cudaMalloc(first, bytes);
        cudaMalloc(second, bytes);
        System.out.println("devices: " + count[0] + ", device " + device + " allocated " + first);
        cudaMemcpy(first, Pointer.to(data), bytes, cudaMemcpyKind.cudaMemcpyHostToDevice);
        cudaMemset(first, 0, bytes / 2);
        cudaMemcpy(second, first, bytes, cudaMemcpyKind.cudaMemcpyDeviceToDevice);
        int[] back = new int[n];
        cudaMemcpy(Pointer.to(back), second, bytes, cudaMemcpyKind.cudaMemcpyDeviceToHost);
        int[] expected = data.clone();
        Arrays.fill(expected, 0, n / 2, 0);
        System.out.println(
                "runtime round trip: " + (Arrays.equals(expected, back) ? "PASSED" : "FAILED") + ", " + n + " values");
        cudaFree(first);
        cudaFree(second);
    }
}
