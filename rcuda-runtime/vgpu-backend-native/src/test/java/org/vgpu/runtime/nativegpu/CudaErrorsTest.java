package org.vgpu.runtime.nativegpu;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

class CudaErrorsTest {

    @Test
    void successPasses() {
        assertDoesNotThrow(() -> CudaErrors.check(CudaErrors.CUDA_SUCCESS, "cuCtxSynchronize"));
    }

    @Test
    void aKnownResultKeepsItsCodeAndNamesTheCall() {
        VgpuException e =
                assertThrows(VgpuException.class, () -> CudaErrors.check(2, "cuMemCreate(4096 bytes on device 0)"));
        assertEquals(ErrorCode.CUDA_ERROR_OUT_OF_MEMORY, e.code());
        assertEquals(
                "CUDA_ERROR_OUT_OF_MEMORY: cuMemCreate(4096 bytes on device 0) failed: CUDA_ERROR_OUT_OF_MEMORY"
                        + " (CUresult 2)",
                e.getMessage());
    }

    @Test
    void aResultVgpuDoesNotListKeepsTheDriversNameAndNumber() {
        VgpuException e = CudaErrors.failure(720, "cuLaunchKernel(emptyKernel)");
        assertEquals(ErrorCode.CUDA_ERROR_UNKNOWN, e.code());
        assertEquals(
                "cuLaunchKernel(emptyKernel) failed: CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE (CUresult 720)",
                e.detail());
    }
}
