package org.vgpu.runtime.api;

/**
 * The pointer attributes {@link VirtualGpu#pointerGetAttribute} answers for a device address of a
 * vGPU, with CUDA's {@code CUpointer_attribute} numbers. Every answer comes from the runtime's own
 * map of the window, so it is the same on every backend and after a migration.
 */
public enum PointerAttribute implements CudaNumbered {
    /** {@link #MEMORY_TYPE_DEVICE}: vgpu's memory is device memory. */
    MEMORY_TYPE(2),
    /** The address itself: a window address is what kernels use. */
    DEVICE_POINTER(3),
    /** 0: nothing in a window is managed memory. */
    IS_MANAGED(8),
    /** The vGPU's index in the job, which is its device to the program (as {@code ctxGetDevice}). */
    DEVICE_ORDINAL(9),
    /** Where the allocation holding the address starts. */
    RANGE_START_ADDR(11),
    /** The allocation's size, as allocated. */
    RANGE_SIZE(12),
    /** 1: every allocation is mapped while it lives. */
    MAPPED(13);

    /** CUDA's {@code CU_MEMORYTYPE_DEVICE}. */
    public static final long MEMORY_TYPE_DEVICE = 2;

    private static final CudaNumbered.Index<PointerAttribute> INDEX =
            new CudaNumbered.Index<>("cuPointerGetAttribute", values());

    private final int cudaNumber;

    PointerAttribute(int cudaNumber) {
        this.cudaNumber = cudaNumber;
    }

    /** CUDA's {@code CU_POINTER_ATTRIBUTE_*} value. */
    @Override
    public int cudaNumber() {
        return cudaNumber;
    }

    /** The attribute CUDA numbers {@code number}; CUDA_ERROR_INVALID_VALUE naming it when vgpu does not answer it. */
    public static PointerAttribute fromCuda(int number) {
        return INDEX.of(number);
    }
}
