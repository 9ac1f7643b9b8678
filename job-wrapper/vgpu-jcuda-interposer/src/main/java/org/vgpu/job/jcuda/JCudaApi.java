package org.vgpu.job.jcuda;

import java.util.function.IntFunction;

import jcuda.CudaException;
import jcuda.driver.CUresult;
import jcuda.nvrtc.nvrtcResult;
import jcuda.runtime.cudaError;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The three JCuda APIs the shims stand in for, each with JCuda's own error behaviour: a call returns its API's error
 * code, or, once the program called that API's {@code setExceptionsEnabled(true)}, throws {@link CudaException} for
 * any code but success, its message naming the code as JCuda's does, followed by vgpu's reason.
 */
@SuppressWarnings("ImmutableEnumChecker") // mirrors JCuda's per-API exceptions switch, which is process-wide too
enum JCudaApi {
    DRIVER(CUresult::stringFor),
    RUNTIME(cudaError::stringFor),
    NVRTC(nvrtcResult::stringFor);

    /** A shim call's body: 0 for success, or a code that is an answer (CUDA_ERROR_NOT_READY for a query). */
    @FunctionalInterface
    interface Body {
        int run();
    }

    /** A body that only succeeds or throws. */
    @FunctionalInterface
    interface Action {
        void run();
    }

    private final IntFunction<String> codeName;
    private volatile boolean exceptions;

    JCudaApi(IntFunction<String> codeName) {
        this.codeName = codeName;
    }

    void setExceptionsEnabled(boolean enabled) {
        exceptions = enabled;
    }

    /** Runs {@code body} as JCuda's {@code call} would return or throw. */
    int call(String call, Body body) {
        int code;
        try {
            code = body.run();
        } catch (VgpuException e) {
            return failed(call, e);
        }
        return result(call, code, null);
    }

    /**
     * Runs {@code action} as JCuda's {@code call} would return or throw. Not through {@link #call(String, Body)}: a
     * wrapping lambda would cost every copy and launch an allocation and a frame more, which matters most while the
     * JIT has not compiled the path yet.
     */
    int call(String call, Action action) {
        try {
            action.run();
        } catch (VgpuException e) {
            return failed(call, e);
        }
        return 0;
    }

    private int failed(String call, VgpuException e) {
        return result(call, code(e), e.detail());
    }

    /** The API's number for {@code e}'s error, as a call would return it (a stream callback's status). */
    int code(VgpuException e) {
        return code(e.code());
    }

    private int result(String call, int code, String detail) {
        if (code != 0 && exceptions) {
            throw new CudaException(
                    codeName.apply(code) + (detail == null ? "" : " (vgpu, " + call + ": " + detail + ")"));
        }
        return code;
    }

    /**
     * The API's number for a runtime error: CUDA's own codes are the same in the driver and the runtime API for the
     * errors vgpu raises; vgpu's own (a lost worker, a kernel the emulation has no twin of) are CUDA's "unknown".
     */
    private int code(ErrorCode error) {
        if (this == NVRTC) {
            return nvrtcResult.NVRTC_ERROR_INVALID_INPUT;
        }
        return error.number() > ErrorCode.CUDA_ERROR_UNKNOWN.number()
                ? ErrorCode.CUDA_ERROR_UNKNOWN.number()
                : error.number();
    }

    /**
     * What an unsupported call does, the same with or without exceptions enabled: it throws, naming the call, rather
     * than return a code a program may not check, since the program would go on with results vgpu never computed.
     */
    static RuntimeException unsupported(String call) {
        return new CudaException("vgpu does not support " + call + " under vgpu run; see README (JCuda programs)");
    }
}
