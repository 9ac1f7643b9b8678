package org.vgpu.runtime.nativegpu;

import jcuda.driver.CUresult;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * Turns CUDA driver results, from JCuda and from the FFM binding alike, into {@link VgpuException}s
 * that name the call. The driver's own name of the result is kept in the message as well because
 * {@link ErrorCode} lists only the results vgpu reacts to; the rest map to CUDA_ERROR_UNKNOWN.
 */
public final class CudaErrors {
    public static final int CUDA_SUCCESS = 0;

    private CudaErrors() {}

    /** Throws unless {@code result} is CUDA_SUCCESS; {@code call} names the call and its arguments. */
    public static void check(int result, String call) {
        if (result != CUDA_SUCCESS) {
            throw failure(result, call);
        }
    }

    public static VgpuException failure(int result, String call) {
        return new VgpuException(
                ErrorCode.fromNumber(result),
                call + " failed: " + CUresult.stringFor(result) + " (CUresult " + result + ")");
    }

    /** As {@link #failure(int, String)}, followed by what else the driver said, such as a JIT log. */
    public static VgpuException failure(int result, String call, String driverOutput) {
        return new VgpuException(
                ErrorCode.fromNumber(result),
                call + " failed: " + CUresult.stringFor(result) + " (CUresult " + result + "): " + driverOutput);
    }
}
