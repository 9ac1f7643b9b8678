package jcudaprograms;

import static jcuda.driver.JCudaDriver.*;

import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.CUmemAttach_flags;

/** Not one of the eight: a program that uses managed memory, which vgpu does not support, after a call it does. */
public class JCudaUnsupportedCall {
    public static void main(String[] args) {
        cuInit(0);
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        CUdeviceptr plain = new CUdeviceptr();
        int result = cuMemAlloc(plain, 4096);
        System.out.println("allocated 4096 B with cuMemAlloc: result " + result);
        CUdeviceptr managed = new CUdeviceptr();
        cuMemAllocManaged(managed, 4096, CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL);
        System.out.println("managed memory at " + managed);
    }
}
