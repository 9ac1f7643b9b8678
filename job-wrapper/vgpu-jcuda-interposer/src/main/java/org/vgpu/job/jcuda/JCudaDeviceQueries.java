package org.vgpu.job.jcuda;

import static org.vgpu.runtime.api.DeviceAttribute.*;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import jcuda.driver.CUdevprop;
import jcuda.runtime.cudaDeviceProp;

import org.vgpu.runtime.api.DeviceAttribute;
import org.vgpu.runtime.api.VirtualGpu;

/**
 * JCuda's device queries that answer many figures at once, {@code cudaGetDeviceProperties} and {@code
 * cuDeviceGetProperties}, and the device's name, filled from one vGPU's {@link VirtualGpu#deviceProperties} and {@link
 * VirtualGpu#deviceGetAttribute}, as CUDA fills them from the device's attributes: so they answer as the device behind
 * the vGPU now (the driver's figures on a local GPU, the worker's GPU's on a remote vGPU, the emulation's fixed ones),
 * and as the device it moved to after a migration. The UUID and LUID stay zero: vgpu answers none.
 */
final class JCudaDeviceQueries {
    private JCudaDeviceQueries() {}

    /** As {@code cuDeviceGetName}: the name, NUL-terminated, cut to {@code length} bytes with its NUL. */
    static void name(VirtualGpu gpu, byte[] name, int length) {
        byte[] text = gpu.deviceProperties().name().getBytes(StandardCharsets.US_ASCII);
        int room = Math.min(length, name.length);
        Arrays.fill(name, 0, Math.max(0, room), (byte) 0);
        System.arraycopy(text, 0, name, 0, Math.max(0, Math.min(text.length, room - 1)));
    }

    /** As {@code cudaGetDeviceProperties}: every field CUDA 12.6's {@code cudaDeviceProp} has but the UUID and LUID. */
    @SuppressWarnings("deprecation") // CUDA deprecated some fields (clock rates, ...), which programs still print
    static void fill(VirtualGpu gpu, cudaDeviceProp properties) {
        Answers device = new Answers(gpu);
        name(gpu, properties.name, properties.name.length);
        properties.totalGlobalMem = gpu.deviceProperties().totalMemory();
        properties.sharedMemPerBlock = device.of(MAX_SHARED_MEMORY_PER_BLOCK);
        properties.regsPerBlock = device.of(MAX_REGISTERS_PER_BLOCK);
        properties.warpSize = device.of(WARP_SIZE);
        properties.memPitch = device.of(MAX_PITCH);
        properties.maxThreadsPerBlock = device.of(MAX_THREADS_PER_BLOCK);
        device.into(properties.maxThreadsDim, MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_Y, MAX_BLOCK_DIM_Z);
        device.into(properties.maxGridSize, MAX_GRID_DIM_X, MAX_GRID_DIM_Y, MAX_GRID_DIM_Z);
        properties.clockRate = device.of(CLOCK_RATE);
        properties.totalConstMem = device.of(TOTAL_CONSTANT_MEMORY);
        properties.major = device.of(COMPUTE_CAPABILITY_MAJOR);
        properties.minor = device.of(COMPUTE_CAPABILITY_MINOR);
        properties.textureAlignment = device.of(TEXTURE_ALIGNMENT);
        properties.texturePitchAlignment = device.of(TEXTURE_PITCH_ALIGNMENT);
        properties.deviceOverlap = device.of(GPU_OVERLAP);
        properties.multiProcessorCount = device.of(MULTIPROCESSOR_COUNT);
        properties.kernelExecTimeoutEnabled = device.of(KERNEL_EXEC_TIMEOUT);
        properties.integrated = device.of(INTEGRATED);
        properties.canMapHostMemory = device.of(CAN_MAP_HOST_MEMORY);
        properties.computeMode = device.of(COMPUTE_MODE);
        properties.maxTexture1D = device.of(MAXIMUM_TEXTURE1D_WIDTH);
        properties.maxTexture1DMipmap = device.of(MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH);
        properties.maxTexture1DLinear = device.of(MAXIMUM_TEXTURE1D_LINEAR_WIDTH);
        device.into(properties.maxTexture2D, MAXIMUM_TEXTURE2D_WIDTH, MAXIMUM_TEXTURE2D_HEIGHT);
        device.into(
                properties.maxTexture2DMipmap, MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT);
        device.into(
                properties.maxTexture2DLinear,
                MAXIMUM_TEXTURE2D_LINEAR_WIDTH,
                MAXIMUM_TEXTURE2D_LINEAR_HEIGHT,
                MAXIMUM_TEXTURE2D_LINEAR_PITCH);
        device.into(properties.maxTexture2DGather, MAXIMUM_TEXTURE2D_GATHER_WIDTH, MAXIMUM_TEXTURE2D_GATHER_HEIGHT);
        device.into(
                properties.maxTexture3D, MAXIMUM_TEXTURE3D_WIDTH, MAXIMUM_TEXTURE3D_HEIGHT, MAXIMUM_TEXTURE3D_DEPTH);
        device.into(
                properties.maxTexture3DAlt,
                MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE,
                MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE,
                MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE);
        properties.maxTextureCubemap = device.of(MAXIMUM_TEXTURECUBEMAP_WIDTH);
        device.into(properties.maxTexture1DLayered, MAXIMUM_TEXTURE1D_LAYERED_WIDTH, MAXIMUM_TEXTURE1D_LAYERED_LAYERS);
        device.into(
                properties.maxTexture2DLayered,
                MAXIMUM_TEXTURE2D_LAYERED_WIDTH,
                MAXIMUM_TEXTURE2D_LAYERED_HEIGHT,
                MAXIMUM_TEXTURE2D_LAYERED_LAYERS);
        device.into(
                properties.maxTextureCubemapLayered,
                MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH,
                MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS);
        properties.maxSurface1D = device.of(MAXIMUM_SURFACE1D_WIDTH);
        device.into(properties.maxSurface2D, MAXIMUM_SURFACE2D_WIDTH, MAXIMUM_SURFACE2D_HEIGHT);
        device.into(
                properties.maxSurface3D, MAXIMUM_SURFACE3D_WIDTH, MAXIMUM_SURFACE3D_HEIGHT, MAXIMUM_SURFACE3D_DEPTH);
        device.into(properties.maxSurface1DLayered, MAXIMUM_SURFACE1D_LAYERED_WIDTH, MAXIMUM_SURFACE1D_LAYERED_LAYERS);
        device.into(
                properties.maxSurface2DLayered,
                MAXIMUM_SURFACE2D_LAYERED_WIDTH,
                MAXIMUM_SURFACE2D_LAYERED_HEIGHT,
                MAXIMUM_SURFACE2D_LAYERED_LAYERS);
        properties.maxSurfaceCubemap = device.of(MAXIMUM_SURFACECUBEMAP_WIDTH);
        device.into(
                properties.maxSurfaceCubemapLayered,
                MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH,
                MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS);
        properties.surfaceAlignment = device.of(SURFACE_ALIGNMENT);
        properties.concurrentKernels = device.of(CONCURRENT_KERNELS);
        properties.ECCEnabled = device.of(ECC_ENABLED);
        properties.pciBusID = device.of(PCI_BUS_ID);
        properties.pciDeviceID = device.of(PCI_DEVICE_ID);
        properties.pciDomainID = device.of(PCI_DOMAIN_ID);
        properties.tccDriver = device.of(TCC_DRIVER);
        properties.asyncEngineCount = device.of(ASYNC_ENGINE_COUNT);
        properties.unifiedAddressing = device.of(UNIFIED_ADDRESSING);
        properties.memoryClockRate = device.of(MEMORY_CLOCK_RATE);
        properties.memoryBusWidth = device.of(GLOBAL_MEMORY_BUS_WIDTH);
        properties.l2CacheSize = device.of(L2_CACHE_SIZE);
        properties.persistingL2CacheMaxSize = device.of(MAX_PERSISTING_L2_CACHE_SIZE);
        properties.maxThreadsPerMultiProcessor = device.of(MAX_THREADS_PER_MULTIPROCESSOR);
        properties.streamPrioritiesSupported = device.of(STREAM_PRIORITIES_SUPPORTED);
        properties.globalL1CacheSupported = device.of(GLOBAL_L1_CACHE_SUPPORTED);
        properties.localL1CacheSupported = device.of(LOCAL_L1_CACHE_SUPPORTED);
        properties.sharedMemPerMultiprocessor = device.of(MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
        properties.regsPerMultiprocessor = device.of(MAX_REGISTERS_PER_MULTIPROCESSOR);
        properties.managedMemory = device.of(MANAGED_MEMORY);
        properties.isMultiGpuBoard = device.of(MULTI_GPU_BOARD);
        properties.multiGpuBoardGroupID = device.of(MULTI_GPU_BOARD_GROUP_ID);
        properties.hostNativeAtomicSupported = device.of(HOST_NATIVE_ATOMIC_SUPPORTED);
        properties.singleToDoublePrecisionPerfRatio = device.of(SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO);
        properties.pageableMemoryAccess = device.of(PAGEABLE_MEMORY_ACCESS);
        properties.concurrentManagedAccess = device.of(CONCURRENT_MANAGED_ACCESS);
        properties.computePreemptionSupported = device.of(COMPUTE_PREEMPTION_SUPPORTED);
        properties.canUseHostPointerForRegisteredMem = device.of(CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM);
        properties.cooperativeLaunch = device.of(COOPERATIVE_LAUNCH);
        properties.cooperativeMultiDeviceLaunch = device.of(COOPERATIVE_MULTI_DEVICE_LAUNCH);
        properties.sharedMemPerBlockOptin = device.of(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
        properties.pageableMemoryAccessUsesHostPageTables = device.of(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES);
        properties.directManagedMemAccessFromHost = device.of(DIRECT_MANAGED_MEM_ACCESS_FROM_HOST);
        properties.maxBlocksPerMultiProcessor = device.of(MAX_BLOCKS_PER_MULTIPROCESSOR);
        properties.accessPolicyMaxWindowSize = device.of(MAX_ACCESS_POLICY_WINDOW_SIZE);
        properties.reservedSharedMemPerBlock = device.of(RESERVED_SHARED_MEMORY_PER_BLOCK);
        properties.hostRegisterSupported = device.of(HOST_REGISTER_SUPPORTED);
        properties.sparseCudaArraySupported = device.of(SPARSE_CUDA_ARRAY_SUPPORTED);
        properties.hostRegisterReadOnlySupported = device.of(READ_ONLY_HOST_REGISTER_SUPPORTED);
        properties.timelineSemaphoreInteropSupported = device.of(TIMELINE_SEMAPHORE_INTEROP_SUPPORTED);
        properties.memoryPoolsSupported = device.of(MEMORY_POOLS_SUPPORTED);
        properties.gpuDirectRDMASupported = device.of(GPU_DIRECT_RDMA_SUPPORTED);
        properties.gpuDirectRDMAFlushWritesOptions = device.of(GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS);
        properties.gpuDirectRDMAWritesOrdering = device.of(GPU_DIRECT_RDMA_WRITES_ORDERING);
        properties.memoryPoolSupportedHandleTypes = device.of(MEMPOOL_SUPPORTED_HANDLE_TYPES);
        properties.deferredMappingCudaArraySupported = device.of(DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED);
        properties.ipcEventSupported = device.of(IPC_EVENT_SUPPORTED);
        properties.clusterLaunch = device.of(CLUSTER_LAUNCH);
        properties.unifiedFunctionPointers = device.of(UNIFIED_FUNCTION_POINTERS);
    }

    /** As {@code cuDeviceGetProperties}, the driver API's older query of the launch limits. */
    static void fill(VirtualGpu gpu, CUdevprop properties) {
        Answers device = new Answers(gpu);
        properties.maxThreadsPerBlock = device.of(MAX_THREADS_PER_BLOCK);
        device.into(properties.maxThreadsDim, MAX_BLOCK_DIM_X, MAX_BLOCK_DIM_Y, MAX_BLOCK_DIM_Z);
        device.into(properties.maxGridSize, MAX_GRID_DIM_X, MAX_GRID_DIM_Y, MAX_GRID_DIM_Z);
        properties.sharedMemPerBlock = device.of(MAX_SHARED_MEMORY_PER_BLOCK);
        properties.totalConstantMemory = device.of(TOTAL_CONSTANT_MEMORY);
        properties.SIMDWidth = device.of(WARP_SIZE);
        properties.memPitch = device.of(MAX_PITCH);
        properties.regsPerBlock = device.of(MAX_REGISTERS_PER_BLOCK);
        properties.clockRate = device.of(CLOCK_RATE);
        properties.textureAlign = device.of(TEXTURE_ALIGNMENT);
    }

    /** The vGPU's attributes, asked one by one as a field needs them. */
    private record Answers(VirtualGpu gpu) {
        int of(DeviceAttribute attribute) {
            return gpu.deviceGetAttribute(attribute);
        }

        void into(int[] values, DeviceAttribute... attributes) {
            for (int i = 0; i < attributes.length; i++) {
                values[i] = of(attributes[i]);
            }
        }
    }
}
