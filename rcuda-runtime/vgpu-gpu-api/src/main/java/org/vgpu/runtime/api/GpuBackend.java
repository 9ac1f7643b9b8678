package org.vgpu.runtime.api;

import java.lang.foreign.MemorySegment;
import java.util.Optional;

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

    /**
     * Device {@code device}'s PCI bus id as the driver writes it (e.g. {@code 0000:3B:00.0}): how a job finds which
     * CUDA ordinal is which GPU of the node. Empty where the backend's devices are not PCI devices (the emulation).
     */
    default Optional<String> pciBusId(int device) {
        return Optional.empty();
    }

    /**
     * As {@code cuMemHostRegister} (portable): page-locks host memory this process mapped itself, such as a region it
     * shares with a CUDA program, so that copies between it and every vGPU of this backend run as from memory of
     * {@link VirtualGpu#memAllocHost}. Whether it did: false where the backend has nothing to lock (the emulation
     * copies from any memory alike), the default. Undo with {@link #hostUnregister} before the memory is unmapped.
     */
    default boolean hostRegister(MemorySegment host) {
        return false;
    }

    /** As {@code cuMemHostUnregister}: undoes a {@link #hostRegister} that returned true. */
    default void hostUnregister(MemorySegment host) {}

    /** Opens vGPU {@code window.vgpuIndex()} on physical device {@code device}, reserving its window. */
    VirtualGpu open(int device, VaWindow window);

    @Override
    default void close() {}
}
