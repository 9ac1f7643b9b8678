package org.vgpu.runtime.api;

import java.util.HashMap;
import java.util.Map;

/**
 * Error codes that travel with every {@link VgpuException}, on the wire too.
 *
 * <p>The CUDA driver's names and numbers are kept as they are so that a GPU programmer recognises
 * them and a remote peer can map them back; vgpu's own conditions use the {@code VGPU_} prefix and
 * numbers above 10000, out of CUDA's range. vgpu's {@code libcuda.so.1} answers a CUDA program each of vgpu's own as
 * the CUDA error nearest in meaning (its {@code wire.c}), since neither the program nor the CUDA runtime can name them.
 */
public enum ErrorCode {
    CUDA_ERROR_INVALID_VALUE(1),
    CUDA_ERROR_OUT_OF_MEMORY(2),
    CUDA_ERROR_NOT_INITIALIZED(3),
    CUDA_ERROR_DEINITIALIZED(4),
    CUDA_ERROR_NO_DEVICE(100),
    CUDA_ERROR_INVALID_DEVICE(101),
    CUDA_ERROR_INVALID_IMAGE(200),
    CUDA_ERROR_INVALID_CONTEXT(201),
    CUDA_ERROR_NO_BINARY_FOR_GPU(209),
    CUDA_ERROR_INVALID_PTX(218),
    CUDA_ERROR_UNSUPPORTED_PTX_VERSION(222),
    CUDA_ERROR_INVALID_SOURCE(300),
    CUDA_ERROR_FILE_NOT_FOUND(301),
    CUDA_ERROR_INVALID_HANDLE(400),
    CUDA_ERROR_NOT_FOUND(500),
    CUDA_ERROR_NOT_READY(600),
    CUDA_ERROR_ILLEGAL_ADDRESS(700),
    CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES(701),
    CUDA_ERROR_LAUNCH_TIMEOUT(702),
    CUDA_ERROR_INVALID_ADDRESS_SPACE(717),
    CUDA_ERROR_LAUNCH_FAILED(719),
    CUDA_ERROR_NOT_PERMITTED(800),
    CUDA_ERROR_NOT_SUPPORTED(801),
    CUDA_ERROR_UNKNOWN(999),
    /** The vGPU's virtual-address window could not be reserved at its fixed address. */
    VGPU_WINDOW_UNAVAILABLE(10001),
    /** The vGPU's virtual-address window has no free range large enough for an allocation. */
    VGPU_WINDOW_FULL(10002),
    /** CPU emulation was asked to launch a kernel that has no Java twin. */
    VGPU_NO_KERNEL_TWIN(10003),
    /** A backend could not be loaded on this machine (no driver, no library). */
    VGPU_BACKEND_UNAVAILABLE(10004),
    /** The vGPU was closed; no call is accepted any more. */
    VGPU_CLOSED(10005),
    /** A peer sent a frame that breaks the wire protocol (truncated, oversized, unknown opcode, bad version). */
    VGPU_PROTOCOL_ERROR(10006),
    /** A session token was missing, forged, expired or issued for another worker. */
    VGPU_AUTH_FAILED(10007),
    /** The connection to a remote GPU worker was lost (the worker died, the network failed, keepalive expired). */
    VGPU_WORKER_LOST(10008),
    /**
     * A migration failed for a reason of vgpu's own rather than a GPU call's (the target's copy differed from the
     * source when checked, or an unexpected failure); it was rolled back and the vGPU runs on its source.
     */
    VGPU_MIGRATION_FAILED(10009);

    private static final Map<Integer, ErrorCode> BY_NUMBER = new HashMap<>();

    static {
        for (ErrorCode code : values()) {
            BY_NUMBER.put(code.number, code);
        }
    }

    private final int number;

    ErrorCode(int number) {
        this.number = number;
    }

    /** The numeric value: CUDA's {@code CUresult} for CUDA codes. */
    public int number() {
        return number;
    }

    /** The code for a CUDA {@code CUresult} or vgpu number; {@link #CUDA_ERROR_UNKNOWN} when unmapped. */
    public static ErrorCode fromNumber(int number) {
        return BY_NUMBER.getOrDefault(number, CUDA_ERROR_UNKNOWN);
    }
}
