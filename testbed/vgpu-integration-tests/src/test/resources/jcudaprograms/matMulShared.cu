// C = A * B for n x n matrices (row-major), n a multiple of TILE, in TILE x TILE tiles through shared memory.
#define TILE 16
extern "C" __global__ void matMulShared(float *a, float *b, float *c, int n)
{
    __shared__ float tileA[TILE][TILE];
    __shared__ float tileB[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float sum = 0.0f;
    for (int t = 0; t < n / TILE; t++)
    {
        tileA[threadIdx.y][threadIdx.x] = a[row * n + t * TILE + threadIdx.x];
        tileB[threadIdx.y][threadIdx.x] = b[(t * TILE + threadIdx.y) * n + col];
        __syncthreads();
        for (int k = 0; k < TILE; k++)
        {
            sum += tileA[threadIdx.y][k] * tileB[k][threadIdx.x];
        }
        __syncthreads();
    }
    c[row * n + col] = sum;
}
