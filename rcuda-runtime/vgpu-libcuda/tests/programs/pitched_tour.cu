// Pitched allocations, 2-D copies and memsets, and copies whose direction CUDA infers from the pointers
// (cudaMemcpyDefault), as image, stencil and halo-exchange codes make them; built the ordinary way (nvcc, static
// cudart). No kernels: every step is a copy or a memset, checked on the host. Prints one line per step with what it
// found; the same binary prints the same lines on plain CUDA and on a vGPU. `pitched_tour MS` waits MS milliseconds
// once its pitched memory holds data on device 0, so that a test can move its vGPU while it runs.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <unistd.h>

#include <cuda.h>

#include "tour.h"

static const size_t WIDTH = 1000; // floats per row: no multiple of any pitch alignment
static const size_t HEIGHT = 37;

static float value_at(size_t row, size_t column)
{
    return (float)(row * 1000 + column);
}

static const char *yes(bool condition)
{
    return condition ? "yes" : "no";
}

// How many of the rows x columns floats at host (rows pitch_floats apart) are what expected(row, column) says.
template <typename Expected>
static size_t matching(const std::vector<float> &host, size_t pitch_floats, size_t rows, size_t columns,
                       Expected expected)
{
    size_t matches = 0;
    for (size_t row = 0; row < rows; row++) {
        for (size_t column = 0; column < columns; column++) {
            matches += host[row * pitch_floats + column] == expected(row, column) ? 1 : 0;
        }
    }
    return matches;
}

// What a host function on a stream saw in page-locked memory, and the word it left there for the work after it.
struct HostStep {
    unsigned int *words;
    unsigned int seen;
};

static void CUDART_CB host_step(void *argument)
{
    HostStep *step = static_cast<HostStep *>(argument);
    step->seen = step->words[0];
    step->words[1] = 42;
}

static void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void *argument)
{
    *static_cast<cudaError_t *>(argument) = status;
}

static float bytes_as_float(uint8_t byte)
{
    uint32_t word = byte * 0x01010101u;
    float value;
    std::memcpy(&value, &word, sizeof value);
    return value;
}

int main(int argc, char **argv)
{
    const long pause_ms = argc > 1 ? std::atol(argv[1]) : 0;
    CHECK(cudaSetDevice(0));
    const size_t row_bytes = WIDTH * sizeof(float);

    // 1. a pitched allocation: rows at least as long as asked, each starting aligned
    float *image = nullptr;
    float *canvas = nullptr;
    size_t pitch = 0;
    size_t canvas_pitch = 0;
    CHECK(cudaMallocPitch((void **)&image, &pitch, row_bytes, HEIGHT));
    CHECK(cudaMallocPitch((void **)&canvas, &canvas_pitch, row_bytes, HEIGHT));
    std::printf("pitched allocation: pitch holds a row: %s, rows aligned to 256 bytes: %s, both pitches equal: %s\n",
                yes(pitch >= row_bytes), yes(pitch % 256 == 0 && (uintptr_t)image % 256 == 0),
                yes(pitch == canvas_pitch));

    // 2. host rows to the device, a memset of the canvas, a rectangle copied on the device, all back to the host
    std::vector<float> host(WIDTH * HEIGHT);
    for (size_t row = 0; row < HEIGHT; row++) {
        for (size_t column = 0; column < WIDTH; column++) {
            host[row * WIDTH + column] = value_at(row, column);
        }
    }
    CHECK(cudaMemcpy2D(image, pitch, host.data(), row_bytes, row_bytes, HEIGHT, cudaMemcpyHostToDevice));
    CHECK(cudaMemset2D(canvas, canvas_pitch, 0x3f, row_bytes, HEIGHT));
    if (pause_ms > 0) {
        usleep((useconds_t)(pause_ms * 1000));
    }
    const size_t from_row = 5, from_column = 100, to_row = 2, to_column = 10, rect_rows = 20, rect_columns = 500;
    CHECK(cudaMemcpy2D((char *)canvas + to_row * canvas_pitch + to_column * sizeof(float), canvas_pitch,
                       (const char *)image + from_row * pitch + from_column * sizeof(float), pitch,
                       rect_columns * sizeof(float), rect_rows, cudaMemcpyDeviceToDevice));
    const size_t wide_pitch_floats = WIDTH + 24; // the host's rows further apart than the device's
    std::vector<float> back(wide_pitch_floats * HEIGHT, -1.0f);
    CHECK(cudaMemcpy2D(back.data(), wide_pitch_floats * sizeof(float), canvas, canvas_pitch, row_bytes, HEIGHT,
                       cudaMemcpyDeviceToHost));
    const float filler = bytes_as_float(0x3f);
    auto canvas_expected = [&](size_t row, size_t column) {
        bool inside = row >= to_row && row < to_row + rect_rows && column >= to_column &&
                      column < to_column + rect_columns;
        return inside ? value_at(row - to_row + from_row, column - to_column + from_column) : filler;
    };
    size_t matches = matching(back, wide_pitch_floats, HEIGHT, WIDTH, canvas_expected);
    bool gaps_untouched = true;
    for (size_t row = 0; row < HEIGHT; row++) {
        for (size_t column = WIDTH; column < wide_pitch_floats; column++) {
            gaps_untouched = gaps_untouched && back[row * wide_pitch_floats + column] == -1.0f;
        }
    }
    std::printf("2-D copies to, on and from the device and a 2-D memset: %zu of %zu floats as expected, the host's row"
                " gaps untouched: %s\n",
                matches, WIDTH * HEIGHT, yes(gaps_untouched));

    // 3. the same on a stream: a column band of the image to the host, a memset of a band, in the stream's order
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    const size_t band_columns = 64;
    std::vector<float> band(band_columns * HEIGHT, -1.0f);
    CHECK(cudaMemset2DAsync((char *)image + 300 * sizeof(float), pitch, 0, band_columns * sizeof(float), HEIGHT / 2,
                            stream));
    CHECK(cudaMemcpy2DAsync(band.data(), band_columns * sizeof(float), (const char *)image + 300 * sizeof(float), pitch,
                            band_columns * sizeof(float), HEIGHT, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    matches = matching(band, band_columns, HEIGHT, band_columns, [](size_t row, size_t column) {
        return row < HEIGHT / 2 ? 0.0f : value_at(row, column + 300);
    });
    std::printf("2-D memset and copy on a stream: %zu of %zu floats as expected\n", matches, band_columns * HEIGHT);

    // 3b. the same band through page-locked memory, its rows further apart than the band's, on the stream
    float *pinned = nullptr;
    const size_t pinned_pitch_floats = band_columns + 16;
    CHECK(cudaMallocHost((void **)&pinned, pinned_pitch_floats * HEIGHT * sizeof(float)));
    for (size_t i = 0; i < pinned_pitch_floats * HEIGHT; i++) {
        pinned[i] = (float)i;
    }
    CHECK(cudaMemcpy2DAsync((char *)image + 500 * sizeof(float), pitch, pinned, pinned_pitch_floats * sizeof(float),
                            band_columns * sizeof(float), HEIGHT, cudaMemcpyHostToDevice, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::fill(pinned, pinned + pinned_pitch_floats * HEIGHT, -1.0f);
    CHECK(cudaMemcpy2DAsync(pinned, pinned_pitch_floats * sizeof(float), (const char *)image + 500 * sizeof(float),
                            pitch, band_columns * sizeof(float), HEIGHT, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    size_t pinned_matching = 0;
    for (size_t row = 0; row < HEIGHT; row++) {
        for (size_t column = 0; column < pinned_pitch_floats; column++) {
            float sent = (float)(row * pinned_pitch_floats + column);
            pinned_matching += pinned[row * pinned_pitch_floats + column] == (column < band_columns ? sent : -1.0f);
        }
    }
    std::printf("2-D copies with page-locked memory on a stream: %zu of %zu floats as expected\n", pinned_matching,
                pinned_pitch_floats * HEIGHT);
    CHECK(cudaFreeHost(pinned));

    // 3c. a host function and a callback on the stream: each after the work before it, before the work after it
    unsigned int *words = nullptr;
    unsigned int *device_words = nullptr;
    CHECK(cudaMallocHost((void **)&words, 4 * sizeof(unsigned int)));
    CHECK(cudaMalloc((void **)&device_words, 2 * sizeof(unsigned int)));
    words[0] = words[1] = words[2] = words[3] = 0;
    HostStep step = {words, 0};
    CHECK(cudaMemsetAsync(device_words, 7, 2 * sizeof(unsigned int), stream));
    CHECK(cudaMemcpyAsync(words, device_words, sizeof(unsigned int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaLaunchHostFunc(stream, host_step, &step));
    CHECK(cudaMemcpyAsync(device_words + 1, words + 1, sizeof(unsigned int), cudaMemcpyHostToDevice, stream));
    cudaError_t callback_status = cudaErrorUnknown;
    CHECK(cudaStreamAddCallback(stream, stream_callback, &callback_status, 0));
    CHECK(cudaMemcpyAsync(words + 2, device_words + 1, sizeof(unsigned int), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::printf("a host function on a stream saw 0x%08x before it, its 42 reached the device after it: %s; a callback's"
                " status: %s\n",
                step.seen, yes(words[2] == 42), cudaGetErrorName(callback_status));
    CHECK(cudaFree(device_words));
    CHECK(cudaFreeHost(words));

    // 4. cudaMemcpyDefault: the direction from the pointers (host to device, on the device, device to host)
    const size_t n = 1 << 16;
    std::vector<float> line(n);
    for (size_t i = 0; i < n; i++) {
        line[i] = (float)(i % 977);
    }
    float *first = nullptr;
    float *second = nullptr;
    CHECK(cudaMalloc((void **)&first, n * sizeof(float)));
    CHECK(cudaMalloc((void **)&second, n * sizeof(float)));
    CHECK(cudaMemcpy(first, line.data(), n * sizeof(float), cudaMemcpyDefault));
    CHECK(cudaMemcpy(second + 1, first, (n - 1) * sizeof(float), cudaMemcpyDefault));
    CHECK(cudaMemset(second, 0, sizeof(float)));
    std::vector<float> shifted(n, -1.0f);
    CHECK(cudaMemcpyAsync(shifted.data(), second, n * sizeof(float), cudaMemcpyDefault, stream));
    CHECK(cudaStreamSynchronize(stream));
    size_t shifted_matches = 0;
    for (size_t i = 0; i < n; i++) {
        shifted_matches += shifted[i] == (i == 0 ? 0.0f : line[i - 1]) ? 1 : 0;
    }
    std::printf("copies with cudaMemcpyDefault: %zu of %zu floats as expected\n", shifted_matches, n);
    // pageable memory is staged when an asynchronous copy of it to the device returns: the program may reuse it
    std::vector<float> staged(n, 7.0f);
    CHECK(cudaMemcpyAsync(second, staged.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream));
    std::fill(staged.begin(), staged.end(), -7.0f);
    CHECK(cudaMemcpyAsync(staged.data(), second, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::printf("pageable memory reused once its asynchronous copy returned: %zu of %zu floats as the copy took them\n",
                (size_t)std::count(staged.begin(), staged.end(), 7.0f), n);
    // stream-ordered allocation (cudaMallocAsync), and an address's allocation as libraries ask the driver for it
    float *ordered = nullptr;
    CHECK(cudaMallocAsync((void **)&ordered, n * sizeof(float), stream));
    CHECK(cudaMemcpyAsync(ordered, first, n * sizeof(float), cudaMemcpyDeviceToDevice, stream));
    CHECK(cudaMemcpyAsync(staged.data(), ordered, n * sizeof(float), cudaMemcpyDeviceToHost, stream));
    CHECK(cudaFreeAsync(ordered, stream));
    CHECK(cudaStreamSynchronize(stream));
    size_t ordered_matching = 0;
    for (size_t i = 0; i < n; i++) {
        ordered_matching += staged[i] == line[i] ? 1 : 0;
    }
    void *range_function = nullptr;
    cudaDriverEntryPointQueryResult found;
    CHECK(cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &range_function, 12000, cudaEnableDefault,
                                           &found));
    CUdeviceptr base = 0;
    size_t range_bytes = 0;
    CUresult range = ((CUresult(*)(CUdeviceptr *, size_t *, CUdeviceptr))range_function)(
        &base, &range_bytes, (CUdeviceptr)(uintptr_t)(first + 100));
    std::printf("stream-ordered allocation: %zu of %zu floats as expected; an address inside an allocation: %s, its"
                " start: %s, %zu bytes\n",
                ordered_matching, n, range == CUDA_SUCCESS ? "found" : "not found",
                yes(base == (CUdeviceptr)(uintptr_t)first), range_bytes);

    // 5. shapes that cut a copy's rows apart: more narrow rows than one request names, rows longer than one chunk
    size_t shapes_matching = 0, shapes_bytes = 0;
    const size_t shapes[2][2] = {{8, 70000}, {5u << 20, 2}}; // {row bytes, rows}
    for (const auto &shape : shapes) {
        const size_t width = shape[0], rows = shape[1];
        unsigned char *rows_on_device = nullptr;
        size_t device_pitch = 0;
        CHECK(cudaMallocPitch((void **)&rows_on_device, &device_pitch, width, rows));
        const size_t host_pitch = width + 4; // never the device's: the rows travel apart
        std::vector<unsigned char> sent(host_pitch * rows);
        for (size_t i = 0; i < sent.size(); i++) {
            sent[i] = (unsigned char)(i * 7 + i / host_pitch);
        }
        CHECK(cudaMemcpy2D(rows_on_device, device_pitch, sent.data(), host_pitch, width, rows,
                           cudaMemcpyHostToDevice));
        std::vector<unsigned char> received(host_pitch * rows, 0xee);
        CHECK(cudaMemcpy2D(received.data(), host_pitch, rows_on_device, device_pitch, width, rows,
                           cudaMemcpyDeviceToHost));
        for (size_t row = 0; row < rows; row++) {
            const size_t at = row * host_pitch;
            shapes_matching += std::memcmp(&received[at], &sent[at], width) == 0 ? width : 0;
        }
        shapes_bytes += width * rows;
        CHECK(cudaFree(rows_on_device));
    }
    std::printf("70000 rows of 8 bytes and 2 rows of 5 MiB to the device and back: %zu of %zu bytes as expected\n",
                shapes_matching, shapes_bytes);

    // 6. a 3-D volume: set whole, a box of it written from the host, all read back into a host volume of its own shape
    const cudaExtent volume = make_cudaExtent(300, 20, 8); // bytes, rows, slices
    cudaPitchedPtr on_device;
    CHECK(cudaMalloc3D(&on_device, volume));
    CHECK(cudaMemset3D(on_device, 0x11, volume));
    const cudaExtent box = make_cudaExtent(200, 10, 5);
    std::vector<unsigned char> box_bytes(box.width * box.height * box.depth);
    for (size_t i = 0; i < box_bytes.size(); i++) {
        box_bytes[i] = (unsigned char)(i % 251);
    }
    cudaMemcpy3DParms into_box = {};
    into_box.srcPtr = make_cudaPitchedPtr(box_bytes.data(), box.width, box.width, box.height);
    into_box.dstPtr = on_device;
    into_box.dstPos = make_cudaPos(40, 2, 1);
    into_box.extent = box;
    into_box.kind = cudaMemcpyHostToDevice;
    CHECK(cudaMemcpy3D(&into_box));
    const size_t host_height = volume.height + 3; // the host's slices further apart than the device's
    std::vector<unsigned char> whole(volume.width * host_height * volume.depth, 0xee);
    cudaMemcpy3DParms back_whole = {};
    back_whole.srcPtr = on_device;
    back_whole.dstPtr = make_cudaPitchedPtr(whole.data(), volume.width, volume.width, host_height);
    back_whole.extent = volume;
    back_whole.kind = cudaMemcpyDeviceToHost;
    CHECK(cudaMemcpy3D(&back_whole));
    size_t volume_matching = 0;
    for (size_t z = 0; z < volume.depth; z++) {
        for (size_t y = 0; y < volume.height; y++) {
            for (size_t x = 0; x < volume.width; x++) {
                bool inside = x >= 40 && x < 40 + box.width && y >= 2 && y < 2 + box.height && z >= 1 &&
                              z < 1 + box.depth;
                unsigned char expected =
                    inside ? box_bytes[((z - 1) * box.height + (y - 2)) * box.width + (x - 40)] : 0x11;
                volume_matching += whole[(z * host_height + y) * volume.width + x] == expected ? 1 : 0;
            }
        }
    }
    std::printf("a 3-D volume set, a box written and all read back: %zu of %zu bytes as expected\n", volume_matching,
                volume.width * volume.height * volume.depth);
    CHECK(cudaFree(on_device.ptr));

    // 7. the program's own memory registered (cudaHostRegister): copied to and from on a stream, asked what it is,
    // registered again in part, unregistered twice
    std::vector<float> own(4096, 2.5f);
    const size_t own_bytes = own.size() * sizeof(float);
    CHECK(cudaHostRegister(own.data(), own_bytes, cudaHostRegisterDefault));
    cudaPointerAttributes own_attributes;
    CHECK(cudaPointerGetAttributes(&own_attributes, own.data() + 100));
    float *scratch = nullptr;
    CHECK(cudaMalloc((void **)&scratch, own_bytes));
    CHECK(cudaMemcpyAsync(scratch, own.data(), own_bytes, cudaMemcpyHostToDevice, stream));
    CHECK(cudaStreamSynchronize(stream));
    std::fill(own.begin(), own.end(), 0.0f);
    CHECK(cudaMemcpyAsync(own.data(), scratch, own_bytes, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    size_t own_matching = 0;
    for (float value : own) {
        own_matching += value == 2.5f ? 1 : 0;
    }
    cudaError_t again = cudaHostRegister(own.data() + 16, 64, cudaHostRegisterDefault);
    (void)cudaGetLastError();
    CHECK(cudaHostUnregister(own.data()));
    cudaError_t twice = cudaHostUnregister(own.data());
    (void)cudaGetLastError();
    std::printf("registered host memory: %zu of %zu floats back, a host pointer: %s, registered again in part: %s,"
                " unregistered twice: %s\n",
                own_matching, own.size(), yes(own_attributes.type == cudaMemoryTypeHost), cudaGetErrorName(again),
                cudaGetErrorName(twice));
    CHECK(cudaFree(scratch));

    // 8. a cache preference, and peer access from device 0 to every other device (a program that asks copies through
    // the host where there is none)
    CHECK(cudaDeviceSetCacheConfig(cudaFuncCachePreferL1));
    int device_count = 0;
    CHECK(cudaGetDeviceCount(&device_count));
    int peers = 0;
    for (int other = 1; other < device_count; other++) {
        int can = 0;
        CHECK(cudaDeviceCanAccessPeer(&can, 0, other));
        peers += can;
    }
    std::printf("a cache preference set; devices device 0 reaches as a peer: %d\n", peers);
    // a copy to the last device and back, as multi-GPU codes move data between their GPUs (through the host where
    // they reach none as a peer); with one device, the last is device 0
    const int last = device_count - 1;
    float *there = nullptr;
    CHECK(cudaSetDevice(last));
    CHECK(cudaMalloc((void **)&there, n * sizeof(float)));
    CHECK(cudaSetDevice(0));
    CHECK(cudaMemcpyPeer(there, last, first, 0, n * sizeof(float)));
    CHECK(cudaMemset(second, 0, n * sizeof(float)));
    CHECK(cudaMemcpy(second, there, n * sizeof(float), cudaMemcpyDefault));
    std::vector<float> back_from_there(n, -1.0f);
    CHECK(cudaMemcpy(back_from_there.data(), second, n * sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("a copy to the last device and back: %zu of %zu floats as expected\n",
                (size_t)std::equal(back_from_there.begin(), back_from_there.end(), line.begin()) * n, n);
    CHECK(cudaSetDevice(last));
    CHECK(cudaFree(there));
    CHECK(cudaSetDevice(0));

    // 9. what the runtime refuses: a row wider than its pitch
    cudaError_t wider = cudaMemcpy2D(image, pitch, host.data(), row_bytes, pitch + 4, 2, cudaMemcpyHostToDevice);
    std::printf("a row wider than its pitch: %s\n", cudaGetErrorName(wider));
    (void)cudaGetLastError();

    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(first));
    CHECK(cudaFree(second));
    CHECK(cudaFree(image));
    CHECK(cudaFree(canvas));
    std::printf("pitched tour done\n");
    return 0;
}
