/*
 * Served on a vGPU: the occupancy calls (cuOccupancy*), which programs and libraries use to choose block sizes and
 * grids. Computed here, as NVIDIA's occupancy calculator computes them, from what the vGPU's backend says of the
 * kernel (registers, static shared memory, its largest block and dynamic shared memory) and of the GPU behind the
 * vGPU (threads, blocks, registers and shared memory of a multiprocessor), kept in process until the vGPU moves and
 * asked at each call otherwise: a vGPU that moved answers for its new GPU.
 */
#include "serving.h"

/* Registers are given to a warp in units of this many (every architecture since Maxwell), and a multiprocessor's
   registers are split among this many schedulers, each holding whole warps. */
#define REGISTER_UNIT 256
#define SCHEDULERS 4
/* Shared memory is given to a block in units of this many bytes. */
#define SHARED_UNIT 128

static CUresult device_attribute(const struct vgpu_device *device, CUdevice_attribute attribute, int *value)
{
    return vgpu_served_cuDeviceGetAttribute(value, attribute, device->ordinal);
}

static CUresult gather(const void *handle, struct vgpu_occupancy *in)
{
    struct vgpu_handle *function = vgpu_launchable(handle);
    if (function == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    const struct vgpu_device *device = function->device;
    CUresult result = vgpu_function_attribute(function, CU_FUNC_ATTRIBUTE_NUM_REGS, &in->registers);
    result = result != CUDA_SUCCESS ? result
                                    : vgpu_function_attribute(function, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                                                              &in->static_shared);
    result = result != CUDA_SUCCESS ? result
                                    : vgpu_function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                                                              &in->max_threads);
    result = result != CUDA_SUCCESS ? result
                                    : vgpu_function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                              &in->max_dynamic_shared);
    static const CUdevice_attribute asked[] = {
        CU_DEVICE_ATTRIBUTE_WARP_SIZE,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
    };
    int *answers[] = {
        &in->warp_size,
        &in->threads_per_multiprocessor,
        &in->blocks_per_multiprocessor,
        &in->registers_per_multiprocessor,
        &in->registers_per_block,
        &in->shared_per_multiprocessor,
        &in->reserved_shared_per_block,
        &in->multiprocessors,
    };
    for (size_t i = 0; i < sizeof asked / sizeof asked[0] && result == CUDA_SUCCESS; i++) {
        result = device_attribute(device, asked[i], answers[i]);
    }
    if (result == CUDA_SUCCESS && (in->warp_size <= 0 || in->multiprocessors <= 0)) {
        result = CUDA_ERROR_INVALID_DEVICE; /* a backend's answer no GPU gives */
    }
    return result;
}

static long round_up(long value, long unit)
{
    return (value + unit - 1) / unit * unit;
}

static int smaller(int a, int b)
{
    return a < b ? a : b;
}

int vgpu_resident_blocks(const struct vgpu_occupancy *in, int block_size, size_t dynamic_shared)
{
    if (block_size <= 0 || block_size > in->max_threads || dynamic_shared > (size_t)in->max_dynamic_shared) {
        return 0;
    }
    long warps = round_up(block_size, in->warp_size) / in->warp_size;
    int blocks = smaller(in->blocks_per_multiprocessor, (int)(in->threads_per_multiprocessor / in->warp_size / warps));
    if (in->registers > 0) {
        long per_warp = round_up((long)in->registers * in->warp_size, REGISTER_UNIT);
        if (per_warp * warps > in->registers_per_block) {
            return 0;
        }
        long warps_by_registers = SCHEDULERS * (in->registers_per_multiprocessor / SCHEDULERS / per_warp);
        blocks = smaller(blocks, (int)(warps_by_registers / warps));
    }
    long shared = round_up((long)in->static_shared + (long)dynamic_shared + in->reserved_shared_per_block, SHARED_UNIT);
    if (shared > 0) {
        blocks = smaller(blocks, (int)(in->shared_per_multiprocessor / shared));
    }
    return blocks;
}

void vgpu_best_block_size(const struct vgpu_occupancy *in, CUoccupancyB2DSize dynamic_of_size, size_t dynamic_shared,
                          int size_limit, int *block_size, int *grid_size)
{
    int limit = size_limit > 0 ? smaller(size_limit, in->max_threads) : in->max_threads;
    int best_size = 0;
    int best_blocks = 0;
    /* the largest block that keeps the most threads resident, trying whole warps from the largest down */
    for (int size = (int)round_up(limit, in->warp_size); size > 0; size -= in->warp_size) {
        int threads = smaller(size, limit);
        size_t dynamic = dynamic_of_size != NULL ? dynamic_of_size(threads) : dynamic_shared;
        int blocks = vgpu_resident_blocks(in, threads, dynamic);
        if ((long)blocks * threads > (long)best_blocks * best_size) {
            best_size = threads;
            best_blocks = blocks;
        }
    }
    *block_size = best_size;
    *grid_size = best_blocks * in->multiprocessors;
}

static CUresult occupancy_flags(unsigned int flags)
{
    /* caching override: whether global loads may go through L1, which changes no count computed here */
    return (flags & ~(unsigned int)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE) != 0 ? CUDA_ERROR_INVALID_VALUE
                                                                                 : CUDA_SUCCESS;
}

CUresult vgpu_served_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                                           int blockSize, size_t dynamicSMemSize,
                                                                           unsigned int flags)
{
    if (numBlocks == NULL || occupancy_flags(flags) != CUDA_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_occupancy in;
    CUresult result = gather(func, &in);
    if (result == CUDA_SUCCESS) {
        *numBlocks = vgpu_resident_blocks(&in, blockSize, dynamicSMemSize);
    }
    return result;
}

CUresult vgpu_served_cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                                 size_t dynamicSMemSize)
{
    return vgpu_served_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize,
                                                                             dynamicSMemSize, CU_OCCUPANCY_DEFAULT);
}

CUresult vgpu_served_cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                                               CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                               size_t dynamicSMemSize, int blockSizeLimit,
                                                               unsigned int flags)
{
    if (minGridSize == NULL || blockSize == NULL || blockSizeLimit < 0 || occupancy_flags(flags) != CUDA_SUCCESS) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_occupancy in;
    CUresult result = gather(func, &in);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    vgpu_best_block_size(&in, blockSizeToDynamicSMemSize, dynamicSMemSize, blockSizeLimit, blockSize, minGridSize);
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                      CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                      size_t dynamicSMemSize, int blockSizeLimit)
{
    return vgpu_served_cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func,
                                                                 blockSizeToDynamicSMemSize, dynamicSMemSize,
                                                                 blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

CUresult vgpu_served_cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                             int blockSize)
{
    if (dynamicSmemSize == NULL || numBlocks <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_occupancy in;
    CUresult result = gather(func, &in);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    *dynamicSmemSize = 0;
    if (vgpu_resident_blocks(&in, blockSize, 0) >= numBlocks) {
        /* each block's share of the multiprocessor, in whole units, less what every block takes anyway */
        long share = in.shared_per_multiprocessor / numBlocks / SHARED_UNIT * SHARED_UNIT;
        long dynamic = share - in.static_shared - in.reserved_shared_per_block;
        dynamic = dynamic < in.max_dynamic_shared ? dynamic : in.max_dynamic_shared;
        *dynamicSmemSize = dynamic > 0 ? (size_t)dynamic : 0;
    }
    return CUDA_SUCCESS;
}

/* A vGPU launches clusters of one block only (a larger cluster is refused at the launch), so a cluster of one block
   is a block, and as many are active as blocks are, on every multiprocessor; of a larger cluster none is. The size
   comes from the configuration's cluster attribute, else the kernel's required cluster size (none on a vGPU). */
CUresult vgpu_served_cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    if (numClusters == NULL || config == NULL || (config->numAttrs > 0 && config->attrs == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    unsigned long long cluster_blocks = 1;
    for (unsigned int k = 0; k < config->numAttrs; k++) {
        if (config->attrs[k].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            cluster_blocks = (unsigned long long)config->attrs[k].value.clusterDim.x * config->attrs[k].value.clusterDim.y *
                             config->attrs[k].value.clusterDim.z;
        }
    }
    struct vgpu_occupancy in;
    CUresult result = gather(func, &in);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    if (cluster_blocks != 1) {
        *numClusters = 0;
        return CUDA_SUCCESS;
    }
    int multiprocessors = 0;
    result = device_attribute(vgpu_launchable(func)->device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &multiprocessors);
    if (result == CUDA_SUCCESS) {
        *numClusters = vgpu_resident_blocks(&in, (int)(config->blockDimX * config->blockDimY * config->blockDimZ),
                                            config->sharedMemBytes) *
                       multiprocessors;
    }
    return result;
}
