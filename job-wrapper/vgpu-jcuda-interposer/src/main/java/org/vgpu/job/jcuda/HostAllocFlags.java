package org.vgpu.job.jcuda;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.VgpuException;

/**
 * The flags of {@code cuMemHostAlloc} and {@code cudaHostAlloc} (the same bits in both APIs), as vgpu honours them.
 * Every pinned buffer the shims give out can be copied to and from every vGPU of the job, so portable memory is what
 * each call gives. Write-combined memory differs only in speed (faster across PCIe, slow for the host to read), so the
 * memory given is ordinary pinned memory, which is at least as fast to read. Mapped memory, host memory a kernel
 * reaches through a device address, is refused: a vGPU's device addresses are its window's, kept across a migration,
 * and a remote vGPU's GPU is on another node, so a kernel reaches host memory only through copies.
 */
enum HostAllocFlags {
    DRIVER("cuMemHostAlloc", "CU_MEMHOSTALLOC_DEVICEMAP"),
    RUNTIME("cudaHostAlloc", "cudaHostAllocMapped");

    private static final int PORTABLE = 0x01;
    private static final int MAPPED = 0x02;
    private static final int WRITE_COMBINED = 0x04;

    private final String call;
    private final String mapped;

    HostAllocFlags(String call, String mapped) {
        this.call = call;
        this.mapped = mapped;
    }

    /** Refuses {@code flags} that are not CUDA's, and mapped memory naming the call and the flag. */
    void check(int flags) {
        if ((flags & ~(PORTABLE | MAPPED | WRITE_COMBINED)) != 0) {
            throw new VgpuException(
                    ErrorCode.CUDA_ERROR_INVALID_VALUE,
                    String.format("%s: flags 0x%x hold bits CUDA defines no flag for", call, flags));
        }
        if ((flags & MAPPED) != 0) {
            throw mappedRefused(call + " with " + mapped);
        }
    }

    /** The refusal of {@code call}, a call that maps host memory into a kernel's address space. */
    RuntimeException mappedRefused(String call) {
        return JCudaApi.unsupported(
                call + " (mapped host memory: a kernel on a vGPU reaches host memory only through copies)");
    }
}
