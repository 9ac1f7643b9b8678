package org.vgpu.runtime.nativegpu;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;

import jcuda.Pointer;
import jcuda.driver.CUfunction;
import jcuda.driver.CUmodule;
import jcuda.driver.CUstream;
import jcuda.driver.JCudaDriver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import org.vgpu.runtime.api.ErrorCode;
import org.vgpu.runtime.api.KernelArg;
import org.vgpu.runtime.api.KernelArgs;
import org.vgpu.runtime.api.VgpuException;

/**
 * vgpu's gather and scatter kernels (copy_kernels.cu) loaded into one vGPU's context: they move a
 * {@link RegionCopyPlan.KernelBatch} of small regions between device memory and a mapped, pinned
 * host buffer in one launch. Where they cannot be loaded, a local GPU copies region by region,
 * which is correct, only slower for many small regions.
 */
final class RegionCopyKernels implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RegionCopyKernels.class);
    static final String PTX_RESOURCE = "/org/vgpu/nativegpu/copy_kernels.ptx";
    static final String GATHER = "vgpuGatherRegions";
    static final String SCATTER = "vgpuScatterRegions";
    private static final int THREADS_PER_BLOCK = 256;
    /** Bytes one block moves per pass: each thread 16. */
    private static final long BLOCK_STEP_BYTES = THREADS_PER_BLOCK * 16L;
    /** Blocks per region at most; a region below the direct-copy size needs no more to keep the device busy. */
    private static final int MAX_BLOCKS_PER_REGION = 16;

    private static final byte[] PTX = readPtx();

    private final CUmodule module;
    private final CUfunction gather;
    private final CUfunction scatter;

    private RegionCopyKernels(CUmodule module, CUfunction gather, CUfunction scatter) {
        this.module = module;
        this.gather = gather;
        this.scatter = scatter;
    }

    /**
     * Loads the kernels into the current context, or returns null, with the reason logged, when
     * the resource is missing or the driver refuses it.
     */
    static RegionCopyKernels loadOrNull(int ordinal) {
        try {
            return load();
        } catch (RuntimeException e) {
            LOG.warn(
                    "GPU {}: cannot load vgpu's copy kernels ({}); gathers and scatters copy region by region",
                    ordinal,
                    e.getMessage());
            return null;
        }
    }

    private static RegionCopyKernels load() {
        if (PTX == null) {
            throw new VgpuException(ErrorCode.VGPU_BACKEND_UNAVAILABLE, PTX_RESOURCE + " is not packaged");
        }
        CUmodule module = new CUmodule();
        CudaErrors.check(JCudaDriver.cuModuleLoadData(module, PTX), "cuModuleLoadData(" + PTX_RESOURCE + ")");
        try {
            CUfunction gather = new CUfunction();
            CUfunction scatter = new CUfunction();
            CudaErrors.check(
                    JCudaDriver.cuModuleGetFunction(gather, module, GATHER), "cuModuleGetFunction(" + GATHER + ")");
            CudaErrors.check(
                    JCudaDriver.cuModuleGetFunction(scatter, module, SCATTER), "cuModuleGetFunction(" + SCATTER + ")");
            return new RegionCopyKernels(module, gather, scatter);
        } catch (RuntimeException e) {
            JCudaDriver.cuModuleUnload(module);
            throw e;
        }
    }

    /** Device regions of {@code batch} -> the packed bytes at {@code packedDevice}, a mapped host buffer. */
    void gather(long packedDevice, RegionCopyPlan.KernelBatch batch, CUstream stream) {
        launch(gather, GATHER, packedDevice, batch, stream);
    }

    /** The packed bytes at {@code packedDevice}, a mapped host buffer -> device regions of {@code batch}. */
    void scatter(long packedDevice, RegionCopyPlan.KernelBatch batch, CUstream stream) {
        launch(scatter, SCATTER, packedDevice, batch, stream);
    }

    private static void launch(
            CUfunction function, String name, long packedDevice, RegionCopyPlan.KernelBatch batch, CUstream stream) {
        int blocksPerRegion = Math.clamp(
                (batch.largestRegionBytes() + BLOCK_STEP_BYTES - 1) / BLOCK_STEP_BYTES, 1, MAX_BLOCKS_PER_REGION);
        Pointer parameters = KernelParameterBuffer.forCurrentThread()
                .marshal(KernelArgs.of(new KernelArg.Pointer(packedDevice), new KernelArg.Bytes(batch.table())));
        int result = JCudaDriver.cuLaunchKernel(
                function,
                blocksPerRegion,
                batch.regions().size(),
                1,
                THREADS_PER_BLOCK,
                1,
                1,
                0,
                stream,
                parameters,
                null);
        if (result != CudaErrors.CUDA_SUCCESS) {
            throw CudaErrors.failure(
                    result,
                    String.format(
                            "cuLaunchKernel(%s, %d regions, packed 0x%x)",
                            name, batch.regions().size(), packedDevice));
        }
    }

    /** Unloads the module; the context must be current. */
    @Override
    public void close() {
        CudaErrors.check(JCudaDriver.cuModuleUnload(module), "cuModuleUnload(" + PTX_RESOURCE + ")");
    }

    private static byte[] readPtx() {
        try (InputStream in = RegionCopyKernels.class.getResourceAsStream(PTX_RESOURCE)) {
            if (in == null) {
                return null;
            }
            byte[] text = in.readAllBytes();
            // cuModuleLoadData reads PTX as a NUL-terminated string.
            byte[] terminated = new byte[text.length + 1];
            System.arraycopy(text, 0, terminated, 0, text.length);
            return terminated;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + PTX_RESOURCE, e);
        }
    }
}
