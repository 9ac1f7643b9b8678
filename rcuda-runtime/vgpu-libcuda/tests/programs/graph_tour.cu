// CUDA graphs made by stream capture, as codes that repeat a step make them (capture once, instantiate, launch many
// times); built the ordinary way (nvcc, static cudart). Prints one line per step with what it found; the same binary
// prints the same lines on plain CUDA and on a vGPU. `graph_tour MS` waits MS milliseconds after the graph's first
// launch, so that a test can move its vGPU between two launches of one graph.
#include <cstdio>
#include <cstdlib>

#include <unistd.h>

#include "tour.h"

__global__ void scale(float *values, float factor, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        values[i] *= factor;
    }
}

__global__ void axpy(float a, const float *x, float *y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = fmaf(a, x[i], y[i]);
    }
}

static void CUDART_CB count_run(void *runs)
{
    ++*static_cast<int *>(runs);
}

static const char *yes(bool condition)
{
    return condition ? "yes" : "no";
}

static int matching(const float *values, const float *input, float factor, int n)
{
    int matches = 0;
    for (int i = 0; i < n; i++) {
        matches += values[i] == factor * input[i] ? 1 : 0;
    }
    return matches;
}

int main(int argc, char **argv)
{
    const int n = 1 << 16;
    const size_t bytes = n * sizeof(float);
    const int threads = 256;
    const int blocks = (n + threads - 1) / threads;
    int pause_ms = argc > 1 ? std::atoi(argv[1]) : 0;
    cudaStream_t stream, other;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaStreamCreate(&other));
    float *x, *y, *in, *out;
    CHECK(cudaMalloc(&x, bytes));
    CHECK(cudaMalloc(&y, bytes));
    CHECK(cudaMallocHost(&in, bytes));
    CHECK(cudaMallocHost(&out, bytes));
    int runs = 0;

    // One step captured: the input copied in, y cleared, y = 2x, y *= 3, the result copied out, a host function.
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    CHECK(cudaStreamIsCapturing(stream, &status));
    bool capturing = status == cudaStreamCaptureStatusActive;
    CHECK(cudaStreamGetCaptureInfo(stream, &status, &id));
    CHECK(cudaMemcpyAsync(x, in, bytes, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemsetAsync(y, 0, bytes, stream));
    axpy<<<blocks, threads, 0, stream>>>(2.0f, x, y, n);
    scale<<<blocks, threads, 0, stream>>>(y, 3.0f, n);
    CHECK(cudaMemcpyAsync(out, y, bytes, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaLaunchHostFunc(stream, count_run, &runs));
    cudaGraph_t step;
    CHECK(cudaStreamEndCapture(stream, &step));
    CHECK(cudaStreamIsCapturing(stream, &status));
    std::printf("a step captured: capturing while recorded: %s, a capture id: %s, no capture after its end: %s, "
                "nothing ran during the capture: %s\n",
                yes(capturing), yes(id != 0), yes(status == cudaStreamCaptureStatusNone), yes(runs == 0));

    cudaGraphExec_t step_exec;
    CHECK(cudaGraphInstantiate(&step_exec, step, 0));
    int good_runs = 0;
    for (int run = 0; run < 3; run++) {
        for (int i = 0; i < n; i++) {
            in[i] = (float)(i % 1000 + run); // read when the graph runs, as a copy node reads its host memory
        }
        cudaStream_t on = run == 2 ? other : stream;
        CHECK(cudaGraphLaunch(step_exec, on));
        CHECK(cudaStreamSynchronize(on));
        good_runs += matching(out, in, 6.0f, n) == n ? 1 : 0;
        if (run == 0 && pause_ms > 0) {
            usleep((useconds_t)pause_ms * 1000);
        }
    }
    std::printf("the step's graph launched 3 times, the last on another stream: %d of 3 results as expected, its host "
                "function ran %d times\n",
                good_runs, runs);

    // A kernel's parameters are the values at the capture: the graph scales by 2 whatever factor holds after.
    float factor = 2.0f;
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    scale<<<blocks, threads, 0, stream>>>(y, factor, n);
    cudaGraph_t scaling;
    CHECK(cudaStreamEndCapture(stream, &scaling));
    factor = 5.0f;
    cudaGraphExec_t scaling_exec;
    CHECK(cudaGraphInstantiate(&scaling_exec, scaling, 0));
    CHECK(cudaMemcpy(y, in, bytes, cudaMemcpyHostToDevice));
    CHECK(cudaGraphLaunch(scaling_exec, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(out, y, bytes, cudaMemcpyDeviceToHost));
    std::printf("a kernel captured with a factor of 2, the factor then set to %.0f: %d of %d values scaled by 2\n",
                factor, matching(out, in, 2.0f, n), n);

    // A capture forked to a second stream and joined back through events, as code that overlaps two parts of a step
    // records it: x = in and y = 0 on the first stream, x *= 2 on the second, then y = 3x + y on the first.
    cudaEvent_t forked, joined;
    CHECK(cudaEventCreateWithFlags(&forked, cudaEventDisableTiming));
    CHECK(cudaEventCreateWithFlags(&joined, cudaEventDisableTiming));
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemcpyAsync(x, in, bytes, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemsetAsync(y, 0, bytes, stream));
    CHECK(cudaEventRecord(forked, stream));
    CHECK(cudaStreamWaitEvent(other, forked, 0));
    CHECK(cudaStreamIsCapturing(other, &status));
    bool other_captured = status == cudaStreamCaptureStatusActive;
    scale<<<blocks, threads, 0, other>>>(x, 2.0f, n);
    CHECK(cudaEventRecord(joined, other));
    CHECK(cudaStreamWaitEvent(stream, joined, 0));
    axpy<<<blocks, threads, 0, stream>>>(3.0f, x, y, n);
    CHECK(cudaMemcpyAsync(out, y, bytes, cudaMemcpyDeviceToHost, stream));
    cudaGraph_t forking;
    CHECK(cudaStreamEndCapture(stream, &forking));
    CHECK(cudaStreamIsCapturing(other, &status));
    bool other_ended = status == cudaStreamCaptureStatusNone;
    cudaGraphExec_t forking_exec;
    CHECK(cudaGraphInstantiate(&forking_exec, forking, 0));
    int forked_runs = 0;
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < n; i++) {
            in[i] = (float)(i % 100 + run);
        }
        CHECK(cudaGraphLaunch(forking_exec, stream));
        CHECK(cudaStreamSynchronize(stream));
        forked_runs += matching(out, in, 6.0f, n) == n ? 1 : 0;
    }
    std::printf("a capture forked to another stream and joined back: the other stream captured: %s, its capture ended "
                "with the first's: %s, %d of 2 results as expected\n",
                yes(other_captured), yes(other_ended), forked_runs);

    // A 2-D memset and 2-D copies of pitched memory captured, as a stencil code's halo step: the rows cleared, all but
    // their last column written from page-locked memory, the rows read back; each launch with what the host holds then.
    const size_t width = 300, rows = 40; // floats a row, rows
    const size_t row_bytes = width * sizeof(float);
    float *pitched, *rows_in, *rows_out;
    size_t pitch = 0;
    CHECK(cudaMallocPitch(&pitched, &pitch, row_bytes, rows));
    CHECK(cudaMallocHost(&rows_in, row_bytes * rows));
    CHECK(cudaMallocHost(&rows_out, row_bytes * rows));
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemset2DAsync(pitched, pitch, 0, row_bytes, rows, stream));
    CHECK(cudaMemcpy2DAsync(pitched, pitch, rows_in, row_bytes, row_bytes - sizeof(float), rows, cudaMemcpyHostToDevice,
                            stream));
    CHECK(cudaMemcpy2DAsync(rows_out, row_bytes, pitched, pitch, row_bytes, rows, cudaMemcpyDeviceToHost, stream));
    cudaGraph_t rows_graph;
    CHECK(cudaStreamEndCapture(stream, &rows_graph));
    cudaGraphExec_t rows_exec;
    CHECK(cudaGraphInstantiate(&rows_exec, rows_graph, 0));
    int rows_runs = 0;
    for (int run = 0; run < 2; run++) {
        for (size_t i = 0; i < width * rows; i++) {
            rows_in[i] = (float)(i + run);
        }
        CHECK(cudaGraphLaunch(rows_exec, stream));
        CHECK(cudaStreamSynchronize(stream));
        size_t good = 0;
        for (size_t i = 0; i < width * rows; i++) {
            good += rows_out[i] == (i % width + 1 < width ? rows_in[i] : 0.0f) ? 1 : 0;
        }
        rows_runs += good == width * rows ? 1 : 0;
    }
    std::printf("a 2-D memset and 2-D copies of pitched memory captured: %d of 2 results as expected\n", rows_runs);

    // What CUDA refuses: the legacy default stream, and a synchronization inside a capture (which ends it, no graph).
    cudaError_t legacy = cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal);
    CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    cudaError_t synchronized = cudaStreamSynchronize(stream);
    cudaGraph_t none = step;
    cudaError_t ended = cudaStreamEndCapture(stream, &none);
    cudaError_t again = cudaStreamEndCapture(stream, &none);
    cudaGetLastError();
    std::printf("capturing the legacy default stream: %s; a captured stream synchronized: %s, the capture's end: %s, "
                "no graph: %s; ending no capture: %s\n",
                cudaGetErrorName(legacy), cudaGetErrorName(synchronized), cudaGetErrorName(ended), yes(none == nullptr),
                cudaGetErrorName(again));

    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    cudaStreamCaptureMode back = mode;
    CHECK(cudaThreadExchangeStreamCaptureMode(&back));
    std::printf("this thread's capture mode: global before, relaxed after: %s\n",
                yes(mode == cudaStreamCaptureModeGlobal && back == cudaStreamCaptureModeRelaxed));

    CHECK(cudaGraphExecDestroy(step_exec));
    CHECK(cudaGraphExecDestroy(scaling_exec));
    CHECK(cudaGraphExecDestroy(forking_exec));
    CHECK(cudaGraphExecDestroy(rows_exec));
    CHECK(cudaGraphDestroy(rows_graph));
    CHECK(cudaFree(pitched));
    CHECK(cudaFreeHost(rows_in));
    CHECK(cudaFreeHost(rows_out));
    CHECK(cudaGraphDestroy(forking));
    CHECK(cudaEventDestroy(forked));
    CHECK(cudaEventDestroy(joined));
    CHECK(cudaGraphDestroy(step));
    CHECK(cudaGraphDestroy(scaling));
    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaStreamDestroy(other));
    std::printf("graph tour done\n");
    return 0;
}
