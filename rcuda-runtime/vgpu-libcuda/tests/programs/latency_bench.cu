// The costs the library's goals are measured by, in microseconds (median of rounds): an empty launch
// (asynchronous), launch + synchronize, a 4 KiB host-to-device copy, and 256 MiB pinned copies each
// way in GB/s. Run plain and through vgpu's libcuda.so.1 in the same run; the script divides.
// Then what frameworks do besides, without a goal of their own: a launch with 256 bytes of parameters (PyTorch's
// element-wise kernels carry such structs), a launch from a thread other than the one that made the context
// (PyTorch's backward pass runs on one), a device attribute and an occupancy query (libraries ask them before
// launches).
// latency_bench PAUSE_MS: waits that long once its memory is on the device before it measures (a borrowed vGPU
// is moved home meanwhile, so the figures are those after a migration).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

__global__ void empty_kernel() {}

struct wide_parameters {
    long long values[32];
};

__global__ void wide_kernel(wide_parameters parameters, long long *out)
{
    if (out != nullptr) {
        *out = parameters.values[31];
    }
}

static double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Rounds run and not counted before those measured: a vGPU served in the program's process runs Java code that
// the JVM compiles during its first few thousand calls (a remote launch + synchronize took 2-3 times as long in the
// first three rounds of 2,000 on the H200), and the Java remote path's benchmark leaves out its warm-up trials too.
static const int warm_up_rounds = 3;

template <typename Step> static double microseconds_per(int repeats, int rounds, Step step)
{
    std::vector<double> results;
    for (int round = -warm_up_rounds; round < rounds; round++) {
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < repeats; i++) {
            step();
        }
        cudaDeviceSynchronize();
        std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
        if (round >= 0) {
            results.push_back(took.count() / repeats);
        }
    }
    return median(results);
}

int main(int argc, char **argv)
{
    cudaFree(nullptr);
    const size_t big = 256u << 20;
    void *device_small, *device_big, *host_big;
    char host_small[4096] = {0};
    cudaMalloc(&device_small, sizeof host_small);
    cudaMalloc(&device_big, big);
    cudaMallocHost(&host_big, big);
    cudaMemcpy(device_big, host_big, big, cudaMemcpyHostToDevice);
    if (argc > 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(argv[1])));
    }
    for (int warm = 0; warm < 1000; warm++) {
        empty_kernel<<<1, 1>>>();
    }
    cudaDeviceSynchronize();
    double launch = microseconds_per(10000, 9, [] { empty_kernel<<<1, 1>>>(); });
    double launch_sync = microseconds_per(2000, 9, [] {
        empty_kernel<<<1, 1>>>();
        cudaDeviceSynchronize();
    });
    double copy_small = microseconds_per(2000, 9, [&] { cudaMemcpy(device_small, host_small, sizeof host_small, cudaMemcpyHostToDevice); });
    double to_device = microseconds_per(5, 5, [&] { cudaMemcpy(device_big, host_big, big, cudaMemcpyHostToDevice); });
    double to_host = microseconds_per(5, 5, [&] { cudaMemcpy(host_big, device_big, big, cudaMemcpyDeviceToHost); });
    wide_parameters wide = {};
    double launch_wide = microseconds_per(10000, 9, [&] { wide_kernel<<<1, 1>>>(wide, nullptr); });
    double launch_other_thread = 0;
    std::thread([&] { launch_other_thread = microseconds_per(10000, 9, [] { empty_kernel<<<1, 1>>>(); }); }).join();
    int value = 0;
    double attribute = microseconds_per(10000, 9, [&] { cudaDeviceGetAttribute(&value, cudaDevAttrMultiProcessorCount, 0); });
    double occupancy = microseconds_per(10000, 9, [&] {
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&value, wide_kernel, 128, 0);
    });
    std::printf("launch_us %.3f\nlaunch_sync_us %.3f\ncopy_4k_us %.3f\nhtod_256m_gbps %.2f\ndtoh_256m_gbps %.2f\n", launch,
                launch_sync, copy_small, big / to_device / 1e3, big / to_host / 1e3);
    std::printf("launch_256b_args_us %.3f\nlaunch_other_thread_us %.3f\nattribute_us %.3f\noccupancy_us %.3f\n", launch_wide,
                launch_other_thread, attribute, occupancy);
    return 0;
}
