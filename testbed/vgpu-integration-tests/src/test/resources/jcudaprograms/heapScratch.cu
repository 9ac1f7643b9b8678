// out[i] = in[i] * 2 + 1 through a scratch buffer each block allocates on the device heap (malloc in the kernel), for
// the device heap programs; a block whose malloc fails writes -1.
extern "C" __global__ void heapScratch(const float *in, float *out, int n)
{
    __shared__ float *scratch;
    if (threadIdx.x == 0)
    {
        scratch = (float *) malloc(blockDim.x * sizeof(float));
    }
    __syncthreads();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (scratch == NULL)
    {
        if (i < n)
        {
            out[i] = -1.0f;
        }
        return;
    }
    if (i < n)
    {
        scratch[threadIdx.x] = in[i] * 2.0f;
    }
    __syncthreads();
    if (i < n)
    {
        out[i] = scratch[threadIdx.x] + 1.0f;
    }
    __syncthreads();
    if (threadIdx.x == 0)
    {
        free(scratch);
    }
}
