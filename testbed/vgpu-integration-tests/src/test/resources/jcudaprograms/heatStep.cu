// One explicit step of 1-D heat diffusion with fixed ends: out[i] = in[i] + alpha (in[i-1] - 2 in[i] + in[i+1]).
extern "C" __global__ void heatStep(float *in, float *out, int n, float alpha)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        if (i == 0 || i == n - 1)
        {
            out[i] = in[i];
        }
        else
        {
            out[i] = in[i] + alpha * (in[i - 1] - 2.0f * in[i] + in[i + 1]);
        }
    }
}
