// sums[r] = the sum of row r, each row an allocation of its own, reached through a table of device pointers.
extern "C" __global__ void sumRows(float **rows, float *sums, int rowCount, int columns)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rowCount)
    {
        float sum = 0.0f;
        for (int c = 0; c < columns; c++)
        {
            sum += rows[r][c];
        }
        sums[r] = sum;
    }
}
