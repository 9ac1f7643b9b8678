// What the CUDA runtime test programs share: their check of a call, runtime_tour's kernels of its second file.
#ifndef TOUR_H
#define TOUR_H
#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

// A runtime call that must succeed: the program stops, naming it, when it does not.
#define CHECK(call)                                                                                  \
    do {                                                                                             \
        cudaError_t status_ = (call);                                                                \
        if (status_ != cudaSuccess) {                                                                \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(status_)); \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

// runtime_tour's kernels of more_kernels.cu

void launch_scale(float *values, float factor, int n, cudaStream_t stream);
void launch_block_sums(const float *values, float *sums, int n);
#endif
