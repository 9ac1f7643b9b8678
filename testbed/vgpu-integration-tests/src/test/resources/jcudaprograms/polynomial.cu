// y = c0 + c1 x + c2 x^2 + c3 x^3 with the coefficients in constant memory, set by the host through
// cuModuleGetGlobal.
__constant__ float coefficients[4];

extern "C" __global__ void polynomial(float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
    {
        float v = x[i];
        y[i] = coefficients[0] + v * (coefficients[1] + v * (coefficients[2] + v * coefficients[3]));
    }
}
