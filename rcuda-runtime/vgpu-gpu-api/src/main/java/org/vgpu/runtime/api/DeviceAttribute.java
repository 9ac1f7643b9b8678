package org.vgpu.runtime.api;

/**
 * The device attributes {@link VirtualGpu#deviceGetAttribute} answers: those programs query to
 * size their launches, with CUDA's {@code CUdevice_attribute} numbers, which JCuda programs pass.
 * Any other number is refused by {@link #fromCuda} rather than answered with a guess.
 */
public enum DeviceAttribute implements CudaNumbered {
    MAX_THREADS_PER_BLOCK(1),
    MAX_BLOCK_DIM_X(2),
    MAX_BLOCK_DIM_Y(3),
    MAX_BLOCK_DIM_Z(4),
    MAX_GRID_DIM_X(5),
    MAX_GRID_DIM_Y(6),
    MAX_GRID_DIM_Z(7),
    /** Static plus dynamic shared memory a block gets without opting in (48 KiB on every GPU since Volta). */
    MAX_SHARED_MEMORY_PER_BLOCK(8),
    TOTAL_CONSTANT_MEMORY(9),
    WARP_SIZE(10),
    MAX_REGISTERS_PER_BLOCK(12),
    /** kHz. */
    CLOCK_RATE(13),
    MULTIPROCESSOR_COUNT(16),
    CONCURRENT_KERNELS(31),
    /** kHz. */
    MEMORY_CLOCK_RATE(36),
    /** Bits. */
    GLOBAL_MEMORY_BUS_WIDTH(37),
    L2_CACHE_SIZE(38),
    MAX_THREADS_PER_MULTIPROCESSOR(39),
    UNIFIED_ADDRESSING(41),
    COMPUTE_CAPABILITY_MAJOR(75),
    COMPUTE_CAPABILITY_MINOR(76),
    MAX_SHARED_MEMORY_PER_MULTIPROCESSOR(81),
    /** The most shared memory a block may use once its kernel's MAX_DYNAMIC_SHARED_SIZE_BYTES is raised. */
    MAX_SHARED_MEMORY_PER_BLOCK_OPTIN(97);

    private static final CudaNumbered.Index<DeviceAttribute> INDEX =
            new CudaNumbered.Index<>("cuDeviceGetAttribute", values());

    private final int cudaNumber;

    DeviceAttribute(int cudaNumber) {
        this.cudaNumber = cudaNumber;
    }

    /** CUDA's {@code CU_DEVICE_ATTRIBUTE_*} value. */
    @Override
    public int cudaNumber() {
        return cudaNumber;
    }

    /**
     * The attribute CUDA numbers {@code number}; CUDA_ERROR_INVALID_VALUE naming the number and the
     * attributes vgpu answers when it is not one of them.
     */
    public static DeviceAttribute fromCuda(int number) {
        return INDEX.of(number);
    }
}
