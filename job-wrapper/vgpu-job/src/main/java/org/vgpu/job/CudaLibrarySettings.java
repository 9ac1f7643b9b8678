package org.vgpu.job;

import java.util.Map;

/**
 * Settings of NVIDIA's libraries that a program served by vgpu's {@code libcuda.so.1} runs with, each put into the
 * program's environment only where the program (or the job) did not set it.
 *
 * <p>{@code CUBLAS_WORKSPACE_CONFIG}: left unset, the CUDA toolkit's cuBLAS (13.1) obtains its default workspace
 * through a hidden service of the driver that vgpu does not serve (slot 51 of the tools' context table), so
 * {@code cublasSgemm} would fail on a vGPU; with a workspace configuration of its own cuBLAS allocates the workspace
 * with ordinary allocations, which vgpu serves (measured on an H200, docs/libcuda.md). {@code :4096:8} is the
 * configuration cuBLAS documents for reproducible results (eight 4 MiB buffers). Its kernels may then differ from
 * those of cuBLAS's default, so a product's last bits may differ from a run without the setting; they equal those of
 * the node's driver with the same setting.
 */
final class CudaLibrarySettings {
    static final String CUBLAS_WORKSPACE = "CUBLAS_WORKSPACE_CONFIG";
    static final String CUBLAS_WORKSPACE_SERVED = ":4096:8";

    private CudaLibrarySettings() {}

    /** Puts each setting into {@code environment} where it has none. */
    static void addTo(Map<String, String> environment) {
        environment.putIfAbsent(CUBLAS_WORKSPACE, CUBLAS_WORKSPACE_SERVED);
    }
}
