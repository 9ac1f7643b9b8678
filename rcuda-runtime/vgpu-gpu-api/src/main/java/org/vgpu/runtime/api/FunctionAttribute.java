package org.vgpu.runtime.api;

/**
 * The kernel attributes {@link VirtualGpu#funcGetAttribute} answers, with CUDA's
 * {@code CUfunction_attribute} numbers; the two {@link #settable} ones are what
 * {@link VirtualGpu#funcSetAttribute} may change.
 */
public enum FunctionAttribute implements CudaNumbered {
    MAX_THREADS_PER_BLOCK(0, false),
    /** Static shared memory the kernel declares. */
    SHARED_SIZE_BYTES(1, false),
    CONST_SIZE_BYTES(2, false),
    LOCAL_SIZE_BYTES(3, false),
    NUM_REGS(4, false),
    /** The PTX ISA version the kernel was compiled for, major x 10 + minor. */
    PTX_VERSION(5, false),
    /** The architecture the kernel's binary is for, major x 10 + minor. */
    BINARY_VERSION(6, false),
    /**
     * The most dynamic shared memory a launch may ask for; 48 KiB less the static shared memory
     * unless raised, up to the device's MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, which a kernel needing
     * more than 48 KiB must do before it is launched so.
     */
    MAX_DYNAMIC_SHARED_SIZE_BYTES(8, true),
    /** Percent of the unified L1/shared memory to give shared memory, -1 for the driver's default. */
    PREFERRED_SHARED_MEMORY_CARVEOUT(9, true);

    private static final CudaNumbered.Index<FunctionAttribute> INDEX =
            new CudaNumbered.Index<>("cuFuncGetAttribute", values());

    private final int cudaNumber;
    private final boolean settable;

    FunctionAttribute(int cudaNumber, boolean settable) {
        this.cudaNumber = cudaNumber;
        this.settable = settable;
    }

    /** CUDA's {@code CU_FUNC_ATTRIBUTE_*} value. */
    @Override
    public int cudaNumber() {
        return cudaNumber;
    }

    /** Whether {@code cuFuncSetAttribute} may change it. */
    public boolean settable() {
        return settable;
    }

    /** The attribute CUDA numbers {@code number}; CUDA_ERROR_INVALID_VALUE naming it when vgpu does not answer it. */
    public static FunctionAttribute fromCuda(int number) {
        return INDEX.of(number);
    }
}
