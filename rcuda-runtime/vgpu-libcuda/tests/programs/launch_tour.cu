// Launches as modern CUDA code writes them (built the ordinary way, plain nvcc): the occupancy API chooses
// the block size, cudaLaunchKernelEx launches with launch attributes, a kernel's attributes are read and
// raised with cudaFuncGetAttributes and cudaFuncSetAttribute. Prints one line per step; the same binary
// prints the same lines on plain CUDA and on a vGPU.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "tour.h"

// y = a x + y, over a grid of any size
__global__ void axpy(float a, const float *x, float *y, int n)
{
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
        y[i] = a * x[i] + y[i];
    }
}

// each block's sum, in dynamic shared memory of at least blockDim.x floats
__global__ void tile_sums(const float *values, float *sums, int n)
{
    extern __shared__ float tile[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x] = i < n ? values[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            tile[threadIdx.x] += tile[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = tile[0];
    }
}

static const char *yes(bool condition)
{
    return condition ? "yes" : "no";
}

int main()
{
    CHECK(cudaSetDevice(0));
    cudaDeviceProp properties;
    CHECK(cudaGetDeviceProperties(&properties, 0));

    // the kernel's attributes, as the compiler and the device set them
    cudaFuncAttributes attributes;
    CHECK(cudaFuncGetAttributes(&attributes, axpy));
    std::printf("axpy: up to 256 threads per block or more: %s, registers counted: %s, binary for the device: %s\n",
                yes(attributes.maxThreadsPerBlock >= 256), yes(attributes.numRegs > 0),
                yes(attributes.binaryVersion >= 80 && attributes.binaryVersion <= properties.major * 10 + properties.minor));

    // the occupancy API chooses the block size and the grid
    int min_grid = 0;
    int block = 0;
    CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, axpy, 0, 0));
    int per_multiprocessor = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_multiprocessor, axpy, block, 0));
    std::printf("occupancy: block of whole warps: %s, blocks per multiprocessor >= 1: %s, within its threads: %s, "
                "grid fills the device: %s\n",
                yes(block > 0 && block % properties.warpSize == 0 && block <= attributes.maxThreadsPerBlock),
                yes(per_multiprocessor >= 1),
                yes(per_multiprocessor * block <= properties.maxThreadsPerMultiProcessor),
                yes(min_grid == per_multiprocessor * properties.multiProcessorCount));

    const int n = 1 << 20;
    std::vector<float> x(n);
    std::vector<float> y(n, 1.0f);
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) / 1000.0f;
    }
    float *dx = nullptr;
    float *dy = nullptr;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dy, y.data(), n * sizeof(float), cudaMemcpyHostToDevice));

    // two dependent launches on a stream, with the attributes modern libraries pass
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cudaLaunchAttribute launch_attributes[4];
    launch_attributes[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    launch_attributes[0].val.programmaticStreamSerializationAllowed = 1;
    launch_attributes[1].id = cudaLaunchAttributeClusterDimension;
    launch_attributes[1].val.clusterDim.x = 1;
    launch_attributes[1].val.clusterDim.y = 1;
    launch_attributes[1].val.clusterDim.z = 1;
    launch_attributes[2].id = cudaLaunchAttributePriority;
    launch_attributes[2].val.priority = 0;
    launch_attributes[3].id = cudaLaunchAttributeIgnore;
    cudaLaunchConfig_t config = {};
    config.gridDim = dim3(min_grid);
    config.blockDim = dim3(block);
    config.dynamicSmemBytes = 0;
    config.stream = stream;
    config.attrs = launch_attributes;
    config.numAttrs = 4;
    CHECK(cudaLaunchKernelEx(&config, axpy, 2.0f, (const float *)dx, dy, n));
    CHECK(cudaLaunchKernelEx(&config, axpy, 0.5f, (const float *)dx, dy, n));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    double total = 0;
    for (float v : y) {
        total += v;
    }
    std::printf("axpy twice through cudaLaunchKernelEx: sum %.3f\n", total);

    // a kernel that needs more dynamic shared memory than a block gets by default opts in first (asked before and
    // after: what the opt-in changes is answered anew)
    const int tile_bytes = 64 * 1024;
    CHECK(cudaFuncGetAttributes(&attributes, tile_sums));
    const int default_bytes = attributes.maxDynamicSharedSizeBytes;
    CHECK(cudaFuncSetAttribute(tile_sums, cudaFuncAttributeMaxDynamicSharedMemorySize, tile_bytes));
    CHECK(cudaFuncGetAttributes(&attributes, tile_sums));
    std::printf("tile_sums: dynamic shared memory allowed %d bytes (%s before)\n", attributes.maxDynamicSharedSizeBytes,
                default_bytes < tile_bytes ? "less" : "NOT LESS");
    int small_tiles = 0;
    int large_tiles = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&small_tiles, tile_sums, 256, 256 * sizeof(float)));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&large_tiles, tile_sums, 256, tile_bytes));
    std::printf("fewer blocks per multiprocessor with %d KiB tiles: %s, still one or more: %s\n", tile_bytes / 1024,
                yes(large_tiles < small_tiles), yes(large_tiles >= 1));
    const int blocks = n / 256;
    float *sums = nullptr;
    CHECK(cudaMalloc(&sums, blocks * sizeof(float)));
    cudaLaunchConfig_t tiles = {};
    tiles.gridDim = dim3(blocks);
    tiles.blockDim = dim3(256);
    tiles.dynamicSmemBytes = tile_bytes;
    CHECK(cudaLaunchKernelEx(&tiles, tile_sums, (const float *)dy, sums, n));
    std::vector<float> block_sums(blocks);
    CHECK(cudaMemcpy(block_sums.data(), sums, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    total = 0;
    for (float v : block_sums) {
        total += v;
    }
    std::printf("tile sums total %.3f over %d blocks\n", total, blocks);

    // errors as programs meet them
    tiles.blockDim = dim3(4096);
    std::printf("launch with 4096 threads per block: %s\n",
                cudaGetErrorName(cudaLaunchKernelEx(&tiles, tile_sums, (const float *)dy, sums, n)));
    tiles.blockDim = dim3(256);
    tiles.dynamicSmemBytes = 2 * tile_bytes;
    std::printf("launch with more dynamic shared memory than allowed: %s\n",
                cudaGetErrorName(cudaLaunchKernelEx(&tiles, tile_sums, (const float *)dy, sums, n)));
    cudaGetLastError();

    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(sums));
    CHECK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
