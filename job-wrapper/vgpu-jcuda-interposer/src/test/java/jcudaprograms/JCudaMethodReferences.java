package jcudaprograms;

import static jcuda.driver.JCudaDriver.cuCtxCreate;
import static jcuda.driver.JCudaDriver.cuDeviceGet;

import java.util.function.IntUnaryOperator;

import jcuda.CudaException;
import jcuda.Pointer;
import jcuda.driver.CUcontext;
import jcuda.driver.CUdevice;
import jcuda.driver.CUdeviceptr;
import jcuda.driver.JCudaDriver;

/**
 * Not one of the eight: JCuda calls made through method references, as a program that passes its
 * calls around would make them, and a reference to a call vgpu does not serve.
 */
public class JCudaMethodReferences {
    /** {@code cuMemAlloc}'s shape. */
    public interface Allocate {
        int allocate(CUdeviceptr pointer, long bytes);
    }

    /** {@code cuMemcpyHtoD}'s shape. */
    public interface CopyToDevice {
        int copy(CUdeviceptr destination, Pointer source, long bytes);
    }

    /** {@code cuMemcpyDtoH}'s shape. */
    public interface CopyToHost {
        int copy(Pointer destination, CUdeviceptr source, long bytes);
    }

    /** {@code cuMemAllocManaged}'s shape. */
    public interface AllocateManaged {
        int allocate(CUdeviceptr pointer, long bytes, int flags);
    }

    /** Allocates 16 bytes at {@code pointer}, writes four floats and reads them back, all through method references. */
    public static float[] roundTrip(CUdeviceptr pointer) {
        IntUnaryOperator init = JCudaDriver::cuInit;
        check(init.applyAsInt(0));
        CUdevice device = new CUdevice();
        cuDeviceGet(device, 0);
        CUcontext context = new CUcontext();
        cuCtxCreate(context, 0, device);
        Allocate allocate = JCudaDriver::cuMemAlloc;
        check(allocate.allocate(pointer, 16));
        CopyToDevice up = JCudaDriver::cuMemcpyHtoD;
        check(up.copy(pointer, Pointer.to(new float[] {1, 2, 3, 4}), 16));
        CopyToHost down = JCudaDriver::cuMemcpyDtoH;
        float[] back = new float[4];
        check(down.copy(Pointer.to(back), pointer, 16));
        return back;
    }

    /** A reference to managed memory's allocation. */
    public static AllocateManaged managed() {
        return JCudaDriver::cuMemAllocManaged;
    }

    private static void check(int result) {
        if (result != 0) {
            throw new CudaException("CUDA error " + result);
        }
    }

    public static void main(String[] args) {
        float[] back = roundTrip(new CUdeviceptr());
        System.out.println("read back through method references: " + java.util.Arrays.toString(back));
        System.out.println("managed memory through a method reference: " + managed());
    }
}
