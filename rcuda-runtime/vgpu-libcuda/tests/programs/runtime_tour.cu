// The CUDA runtime API as HPC codes use it, built the ordinary way (nvcc, static or shared cudart).
// Prints one line per step with what it computed; the same binary prints the same lines on plain
// CUDA and on a vGPU, whatever the number of devices. `runtime_tour MS` waits MS milliseconds after its
// first step, with data on device 0, so that a test can move its vGPU while it runs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include "tour.h"

__constant__ float coefficients[4];
__device__ int launches_seen;

__global__ void polynomial(const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        y[i] = ((coefficients[3] * v + coefficients[2]) * v + coefficients[1]) * v + coefficients[0];
    }
    if (i == 0) {
        atomicAdd(&launches_seen, 1);
    }
}

__global__ void fill_index(int *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = i * 3 + 1;
    }
}

static double sum(const std::vector<float> &values)
{
    double total = 0;
    for (float v : values) {
        total += v;
    }
    return total;
}

int main(int argc, char **argv)
{
    const long pause_ms = argc > 1 ? std::atol(argv[1]) : 0;
    int devices = 0;
    CHECK(cudaGetDeviceCount(&devices));
    cudaDeviceProp properties;
    CHECK(cudaGetDeviceProperties(&properties, 0));
    std::printf("devices >= 1: %s, device 0 has compute capability >= 8: %s\n", devices >= 1 ? "yes" : "no",
                properties.major >= 8 ? "yes" : "no");
    CHECK(cudaSetDevice(0));

    const int n = 1 << 20;
    std::vector<float> x(n);
    for (int i = 0; i < n; i++) {
        x[i] = (float)(i % 1000) / 1000.0f;
    }

    // pageable copies, constant memory by symbol, two kernels of this unit
    float *dx = nullptr;
    float *dy = nullptr;
    CHECK(cudaMalloc(&dx, n * sizeof(float)));
    CHECK(cudaMalloc(&dy, n * sizeof(float)));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    const float c[4] = {1.0f, 0.5f, 0.25f, 0.125f};
    CHECK(cudaMemcpyToSymbol(coefficients, c, sizeof c));
    int zero = 0;
    CHECK(cudaMemcpyToSymbol(launches_seen, &zero, sizeof zero));
    polynomial<<<(n + 255) / 256, 256>>>(dx, dy, n);
    CHECK(cudaGetLastError());
    polynomial<<<(n + 255) / 256, 256>>>(dx, dy, n);
    std::vector<float> y(n);
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof(float), cudaMemcpyDeviceToHost));
    int seen = 0;
    CHECK(cudaMemcpyFromSymbol(&seen, launches_seen, sizeof seen));
    std::printf("polynomial sum %.3f, launches seen by the device %d\n", sum(y), seen);
    std::fflush(stdout);
    usleep((useconds_t)(pause_ms * 1000));

    // pinned memory, a stream, asynchronous copies, a kernel of the other unit, events
    float *pinned = nullptr;
    CHECK(cudaMallocHost(&pinned, n * sizeof(float)));
    std::memcpy(pinned, x.data(), n * sizeof(float));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaMemcpyAsync(dx, pinned, n * sizeof(float), cudaMemcpyHostToDevice, stream));
    launch_scale(dx, 2.0f, n, stream);
    CHECK(cudaMemcpyAsync(pinned, dx, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float elapsed = -1;
    CHECK(cudaEventElapsedTime(&elapsed, start, stop));
    double pinned_sum = 0;
    for (int i = 0; i < n; i++) {
        pinned_sum += pinned[i];
    }
    std::printf("scaled sum %.3f, elapsed time measured: %s\n", pinned_sum, elapsed >= 0 ? "yes" : "no");

    // what a pointer is, as libraries ask of the buffers they are given (inside an allocation, not at its start)
    cudaPointerAttributes on_device, page_locked, pageable, variable;
    CHECK(cudaPointerGetAttributes(&on_device, dy + 100));
    CHECK(cudaPointerGetAttributes(&page_locked, pinned + 100));
    CHECK(cudaPointerGetAttributes(&pageable, x.data()));
    std::printf("pointer kinds: device memory %d on device %d at itself %s, page-locked %d at itself %s, pageable %d\n",
                (int)on_device.type, on_device.device, on_device.devicePointer == dy + 100 ? "yes" : "no",
                (int)page_locked.type, page_locked.hostPointer == pinned + 100 ? "yes" : "no", (int)pageable.type);
    void *seen_address = nullptr;
    CHECK(cudaGetSymbolAddress(&seen_address, launches_seen));
    CHECK(cudaPointerGetAttributes(&variable, seen_address));
    std::printf("a __device__ variable: memory %d on device %d at itself %s\n", (int)variable.type, variable.device,
                variable.devicePointer == seen_address ? "yes" : "no");

    // a second stream that waits for the first's event, and queries of finished work
    cudaStream_t second;
    CHECK(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
    CHECK(cudaStreamWaitEvent(second, stop, 0));
    launch_scale(dx, 1.0f, n, second);
    CHECK(cudaStreamSynchronize(second));
    std::printf("stream after an event: %s, event: %s\n", cudaGetErrorName(cudaStreamQuery(second)),
                cudaGetErrorName(cudaEventQuery(stop)));
    CHECK(cudaStreamDestroy(second));

    // memset, a reduction, device-to-device copies
    float *sums = nullptr;
    int blocks = (n + 255) / 256;
    CHECK(cudaMalloc(&sums, blocks * sizeof(float)));
    CHECK(cudaMemset(sums, 0, blocks * sizeof(float)));
    launch_block_sums(dx, sums, n);
    CHECK(cudaMemcpy(dy, dx, n * sizeof(float), cudaMemcpyDeviceToDevice));
    std::vector<float> block(blocks);
    CHECK(cudaMemcpy(block.data(), sums, blocks * sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("block sums total %.3f over %d blocks\n", sum(block), blocks);

    int *di = nullptr;
    CHECK(cudaMalloc(&di, 1000 * sizeof(int)));
    fill_index<<<4, 256>>>(di, 1000);
    std::vector<int> ints(1000);
    CHECK(cudaMemcpy(ints.data(), di, 1000 * sizeof(int), cudaMemcpyDeviceToHost));
    long long int_total = 0;
    for (int v : ints) {
        int_total += v;
    }
    std::printf("indices total %lld\n", int_total);

    // errors as programs meet them: an invalid configuration, then a bad free, each reported
    fill_index<<<1, 4096>>>(di, 1000);
    std::printf("launch with 4096 threads per block: %s\n", cudaGetErrorName(cudaGetLastError()));
    std::printf("free of a host address: %s\n", cudaGetErrorName(cudaFree(pinned + 1)));
    cudaGetLastError();

    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(stop));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFree(dx));
    CHECK(cudaFree(dy));
    CHECK(cudaFree(sums));
    CHECK(cudaFree(di));
    CHECK(cudaDeviceSynchronize());
    std::printf("done\n");
    return 0;
}
