#ifndef TOUR_H
#define TOUR_H
#include <cuda_runtime.h>

void launch_scale(float *values, float factor, int n, cudaStream_t stream);
void launch_block_sums(const float *values, float *sums, int n);
#endif
