package jcuda.runtime.samples;

import static jcuda.runtime.JCuda.*;

import jcuda.Pointer;
import jcuda.runtime.JCuda;

/**
 * Zero-copy memory as JCuda programs ask for it: pinned memory, then the device pointer that maps it. vgpu serves the
 * first and refuses the second by its name, since a kernel on a vGPU reaches host memory only through copies.
 */
public class JCudaMappedMemory {
    public static void main(String[] args) {
        JCuda.setExceptionsEnabled(true);
        cudaSetDevice(0);
        Pointer host = new Pointer();
        cudaHostAlloc(host, 4096, cudaHostAllocPortable);
        System.out.println("allocated 4096 B of pinned memory with cudaHostAlloc");
        Pointer device = new Pointer();
        cudaHostGetDevicePointer(device, host, 0);
        System.out.println("mapped at " + device);
    }
}
