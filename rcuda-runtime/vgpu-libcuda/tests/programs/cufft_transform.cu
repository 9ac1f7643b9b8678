// cuFFT as codes call it: a 1-D complex transform forward and back, and a 2-D real-to-complex one.
// cufft_transform PAUSE_MS: waits that long between the 1-D plan's forward and inverse transforms (a vGPU moves
// meanwhile, so the plan's kernels run on both GPUs).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <cufft.h>

#define CHECK(call, ok)                                                                              \
    do {                                                                                             \
        int answer = (int)(call);                                                                    \
        if (answer != (int)(ok)) {                                                                   \
            std::fprintf(stderr, "%s failed: %d\n", #call, answer);                                   \
            std::exit(1);                                                                            \
        }                                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    const int n = 4096;
    std::vector<cufftComplex> signal(n);
    for (int i = 0; i < n; i++) {
        signal[i].x = std::sin(2 * M_PI * 5 * i / n) + 0.5f * std::cos(2 * M_PI * 40 * i / n);
        signal[i].y = 0;
    }
    cufftComplex *d;
    CHECK(cudaMalloc(&d, n * sizeof(cufftComplex)), cudaSuccess);
    CHECK(cudaMemcpy(d, signal.data(), n * sizeof(cufftComplex), cudaMemcpyHostToDevice), cudaSuccess);
    cufftHandle plan;
    CHECK(cufftPlan1d(&plan, n, CUFFT_C2C, 1), CUFFT_SUCCESS);
    CHECK(cufftExecC2C(plan, d, d, CUFFT_FORWARD), CUFFT_SUCCESS);
    std::vector<cufftComplex> spectrum(n);
    CHECK(cudaMemcpy(spectrum.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost), cudaSuccess);
    int peak = 1;
    for (int i = 1; i < n / 2; i++) {
        if (std::hypot(spectrum[i].x, spectrum[i].y) > std::hypot(spectrum[peak].x, spectrum[peak].y)) {
            peak = i;
        }
    }
    if (argc > 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(argv[1])));
    }
    CHECK(cufftExecC2C(plan, d, d, CUFFT_INVERSE), CUFFT_SUCCESS);
    std::vector<cufftComplex> back(n);
    CHECK(cudaMemcpy(back.data(), d, n * sizeof(cufftComplex), cudaMemcpyDeviceToHost), cudaSuccess);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        worst = std::fmax(worst, std::fabs(back[i].x / n - signal[i].x));
    }
    std::printf("1-D: strongest frequency %d, round trip error %s\n", peak, worst < 1e-4 ? "< 1e-4" : "TOO LARGE");
    CHECK(cufftDestroy(plan), CUFFT_SUCCESS);

    const int rows = 256, cols = 256;
    std::vector<float> image(rows * cols);
    for (int i = 0; i < rows * cols; i++) {
        image[i] = (float)((i % cols) * (i / cols) % 7);
    }
    float *di;
    cufftComplex *dout;
    CHECK(cudaMalloc(&di, image.size() * sizeof(float)), cudaSuccess);
    CHECK(cudaMalloc(&dout, rows * (cols / 2 + 1) * sizeof(cufftComplex)), cudaSuccess);
    CHECK(cudaMemcpy(di, image.data(), image.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    CHECK(cufftPlan2d(&plan, rows, cols, CUFFT_R2C), CUFFT_SUCCESS);
    CHECK(cufftExecR2C(plan, di, dout), CUFFT_SUCCESS);
    cufftComplex dc;
    CHECK(cudaMemcpy(&dc, dout, sizeof dc, cudaMemcpyDeviceToHost), cudaSuccess);
    double expected = 0;
    for (float v : image) {
        expected += v;
    }
    std::printf("2-D: the zero frequency equals the image's sum: %s\n", std::fabs(dc.x - expected) < 1e-2 * expected ? "yes" : "NO");
    CHECK(cufftDestroy(plan), CUFFT_SUCCESS);
    CHECK(cudaFree(d), cudaSuccess);
    CHECK(cudaFree(di), cudaSuccess);
    CHECK(cudaFree(dout), cudaSuccess);
    std::printf("done\n");
    return 0;
}
