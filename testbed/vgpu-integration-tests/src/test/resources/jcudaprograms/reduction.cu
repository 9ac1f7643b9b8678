// One pass of a sum reduction: block b sums elements [2 * b * blockDim.x, 2 * (b + 1) * blockDim.x) of in
// (those below n) into out[b], through shared memory. Launched with blockDim.x a power of two and
// blockDim.x * sizeof(float) bytes of dynamic shared memory; the program calls it twice.
extern "C" __global__ void reducePartial(float *in, float *out, int n)
{
    extern __shared__ float partial[];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * (blockDim.x * 2) + t;
    float sum = 0.0f;
    if (i < n) sum += in[i];
    if (i + blockDim.x < n) sum += in[i + blockDim.x];
    partial[t] = sum;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s >>= 1)
    {
        if (t < s) partial[t] += partial[t + s];
        __syncthreads();
    }
    if (t == 0) out[blockIdx.x] = partial[0];
}
