// data[i] = data[i] * factor + 1, for the streams program's chunks.
extern "C" __global__ void scale(float *data, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        data[i] = data[i] * factor + 1.0f;
    }
}
