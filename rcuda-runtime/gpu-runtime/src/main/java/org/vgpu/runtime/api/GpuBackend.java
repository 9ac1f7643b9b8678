package org.vgpu.runtime.api;

/**
 * A kind of device that vGPUs can be opened on: the native GPUs of this machine, the CPU emulation,
 * or (later) a remote worker.
 */
public interface GpuBackend extends AutoCloseable {

    /** "native", "emulated", ... */
    String name();

    /** Whether this backend emulates GPUs on the CPU. */
    boolean isEmulation();

    int deviceCount();

    DeviceProperties deviceProperties(int device);

    /** Opens vGPU {@code window.vgpuIndex()} on physical device {@code device}, reserving its window. */
    VirtualGpu open(int device, VaWindow window);

    @Override
    default void close() {}
}
