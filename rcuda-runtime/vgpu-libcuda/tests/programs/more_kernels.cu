// A second translation unit, as codes split kernels across files: its kernels reach the program
// through the same fatbinary registration as the first unit's.
#include "tour.h"

__global__ void scale(float *values, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        values[i] *= factor;
    }
}

__global__ void block_sums(const float *values, float *sums, int n)
{
    __shared__ float partial[256];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    partial[threadIdx.x] = i < n ? values[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = partial[0];
    }
}

void launch_scale(float *values, float factor, int n, cudaStream_t stream)
{
    scale<<<(n + 255) / 256, 256, 0, stream>>>(values, factor, n);
}

void launch_block_sums(const float *values, float *sums, int n)
{
    block_sums<<<(n + 255) / 256, 256>>>(values, sums, n);
}
