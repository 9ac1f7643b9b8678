package org.vgpu.runtime.api;

/**
 * The node's CUDA driver's own handles behind a vGPU that runs on a GPU of this process, as plain addresses, the way
 * the driver's C API takes them: what a caller in this process that calls the driver itself for a vGPU's hottest
 * calls (vgpu's {@code libcuda.so.1} serving a CUDA program in the program's process) hands the driver.
 */
public interface DriverHandles {
    /** The {@code CUcontext} the vGPU's calls run in. */
    long driverContext();

    /** The {@code CUfunction} behind {@code function}. */
    long driverFunction(FunctionHandle function);

    /** The {@code CUstream} behind {@code stream}: 0 for {@link StreamHandle#DEFAULT}, CUDA's legacy default stream. */
    long driverStream(StreamHandle stream);
}
