package org.vgpu.runtime.api;

/**
 * The context limits {@link VirtualGpu#ctxSetLimit} sets and {@link VirtualGpu#ctxGetLimit} reads:
 * the sizes a kernel's device-side code draws on, with CUDA's {@code CUlimit} numbers, which JCuda
 * programs pass, and CUDA's defaults, which a context has until a program sets them.
 */
public enum ContextLimit implements CudaNumbered {
    /** Bytes of stack each GPU thread has (recursion, large local arrays). */
    STACK_SIZE(0x00, 1024),
    /** Bytes of the FIFO that device-side {@code printf} writes into. */
    PRINTF_FIFO_SIZE(0x01, 1 << 20),
    /** Bytes of the heap device-side {@code malloc} allocates from. */
    MALLOC_HEAP_SIZE(0x02, 8 << 20);

    private static final CudaNumbered.Index<ContextLimit> INDEX = new CudaNumbered.Index<>("cuCtxSetLimit", values());

    private final int cudaNumber;
    private final long cudaDefault;

    ContextLimit(int cudaNumber, long cudaDefault) {
        this.cudaNumber = cudaNumber;
        this.cudaDefault = cudaDefault;
    }

    /** CUDA's {@code CU_LIMIT_*} value. */
    @Override
    public int cudaNumber() {
        return cudaNumber;
    }

    /** The value a fresh CUDA context has. */
    public long cudaDefault() {
        return cudaDefault;
    }

    /** The limit CUDA numbers {@code number}; CUDA_ERROR_INVALID_VALUE naming it when vgpu does not set it. */
    public static ContextLimit fromCuda(int number) {
        return INDEX.of(number);
    }
}
