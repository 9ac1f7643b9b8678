// cuBLAS as HPC codes call it: an SGEMM and a strided batched GEMM, checked against the host.
// Optional argument: milliseconds to wait between the two (time for a vGPU to move while the handle lives).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CHECK_CUDA(call)                                                                             \
    do {                                                                                             \
        cudaError_t s_ = (call);                                                                     \
        if (s_ != cudaSuccess) {                                                                     \
            std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(s_));                         \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)
#define CHECK_BLAS(call)                                                                             \
    do {                                                                                             \
        cublasStatus_t s_ = (call);                                                                  \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                           \
            std::fprintf(stderr, "%s: cuBLAS status %d\n", #call, (int)s_);                          \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    const int pause_ms = argc > 1 ? std::atoi(argv[1]) : 0;
    const int n = 256;
    const int batch = 8;
    std::vector<float> a(n * n * batch), b(n * n * batch), c(n * n * batch, 0.0f);
    for (size_t i = 0; i < a.size(); i++) {
        a[i] = (float)((i * 7) % 13) / 13.0f;
        b[i] = (float)((i * 11) % 17) / 17.0f;
    }
    float *da, *db, *dc;
    CHECK_CUDA(cudaMalloc(&da, a.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&db, b.size() * sizeof(float)));
    CHECK_CUDA(cudaMalloc(&dc, c.size() * sizeof(float)));
    CHECK_CUDA(cudaMemcpy(da, a.data(), a.size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(db, b.data(), b.size() * sizeof(float), cudaMemcpyHostToDevice));
    cublasHandle_t handle;
    CHECK_BLAS(cublasCreate(&handle));
    // full FP32: results comparable to the host's to a tolerance, and equal between two runs
    CHECK_BLAS(cublasSetMathMode(handle, CUBLAS_PEDANTIC_MATH));
    const float one = 1.0f, zero = 0.0f;
    CHECK_BLAS(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db, n, &zero, dc, n));
    CHECK_CUDA(cudaMemcpy(c.data(), dc, n * n * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0, total = 0;
    for (int col = 0; col < n; col += 17) {
        for (int row = 0; row < n; row += 13) {
            double expected = 0;
            for (int k = 0; k < n; k++) {
                expected += (double)a[k * n + row] * b[col * n + k];
            }
            double error = std::abs(expected - c[col * n + row]);
            worst = error > worst ? error : worst;
        }
    }
    for (int i = 0; i < n * n; i++) {
        total += c[i];
    }
    std::printf("sgemm %dx%d: sum %.4f, worst error against the host %s\n", n, n, total, worst < 1e-2 ? "< 1e-2" : "TOO LARGE");
    std::fflush(stdout);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
    CHECK_BLAS(cublasSgemmStridedBatched(handle, CUBLAS_OP_N, CUBLAS_OP_T, n, n, n, &one, da, n, (long long)n * n, db, n,
                                         (long long)n * n, &zero, dc, n, (long long)n * n, batch));
    CHECK_CUDA(cudaMemcpy(c.data(), dc, c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    total = 0;
    for (float v : c) {
        total += v;
    }
    std::printf("batched gemm x%d: sum %.4f\n", batch, total);
    CHECK_BLAS(cublasDestroy(handle));
    CHECK_CUDA(cudaFree(da));
    CHECK_CUDA(cudaFree(db));
    CHECK_CUDA(cudaFree(dc));
    std::printf("done\n");
    return 0;
}
