/*
 * A driver-API program that runs for a while, as a simulation does: it keeps state on the device
 * (a vector it updates in place, step after step, with a PTX kernel) and checks it against the host
 * after every step. Between steps it pauses (argv[2] milliseconds), so that a vGPU can move under
 * it; it prints its checksum at the end, the same wherever its vGPU ran. With `fault` it then launches
 * the kernel on memory it does not have, as a program with a bug does, and prints where the error
 * came: a GPU reports a kernel's fault at the next synchronizing call, not at the launch.
 * Usage: driver_steps STEPS PAUSE_MS [fault]
 */
#include "driver_check.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* state[i] = state[i] * 0.5 + step + i % 7, in integers kept exact as floats */
static const char ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".visible .entry relax(.param .u64 state, .param .u32 step, .param .u32 n)\n"
    "{\n"
    "  .reg .pred p; .reg .b32 r<9>; .reg .f32 f<4>; .reg .b64 rd<4>;\n"
    "  ld.param.u64 rd1, [state]; ld.param.u32 r1, [step]; ld.param.u32 r2, [n];\n"
    "  mov.u32 r3, %ctaid.x; mov.u32 r4, %ntid.x; mov.u32 r5, %tid.x; mad.lo.s32 r6, r3, r4, r5;\n"
    "  setp.ge.u32 p, r6, r2; @p bra done;\n"
    "  cvta.to.global.u64 rd2, rd1; mul.wide.u32 rd3, r6, 4; add.s64 rd2, rd2, rd3;\n"
    "  ld.global.f32 f1, [rd2]; rem.u32 r7, r6, 7; add.u32 r8, r7, r1; cvt.rn.f32.u32 f2, r8;\n"
    "  fma.rn.f32 f3, f1, 0f3F000000, f2; st.global.f32 [rd2], f3;\n"
    "done:\n"
    "  ret;\n"
    "}\n";

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 20;
    int pause_ms = argc > 2 ? atoi(argv[2]) : 0;
    unsigned int n = 1 << 16;
    CHECK(cuInit(0));
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));
    CUcontext context;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CUmodule module;
    CHECK(cuModuleLoadData(&module, ptx));
    CUfunction relax;
    CHECK(cuModuleGetFunction(&relax, module, "relax"));
    float *host = calloc(n, sizeof(float));
    float *back = malloc(n * sizeof(float));
    CUdeviceptr state;
    CHECK(cuMemAlloc(&state, n * sizeof(float)));
    CHECK(cuMemsetD32(state, 0, n));
    for (int step = 1; step <= steps; step++) {
        unsigned int s = (unsigned int)step;
        void *arguments[] = {&state, &s, &n};
        CHECK(cuLaunchKernel(relax, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, arguments, NULL));
        for (unsigned int i = 0; i < n; i++) {
            host[i] = host[i] * 0.5f + (float)(i % 7 + s);
        }
        CHECK(cuMemcpyDtoH(back, state, n * sizeof(float)));
        for (unsigned int i = 0; i < n; i++) {
            if (back[i] != host[i]) {
                fprintf(stderr, "step %d: element %u is %f, expected %f\n", step, i, back[i], host[i]);
                return 2;
            }
        }
        if (pause_ms > 0) {
            struct timespec pause = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
            nanosleep(&pause, NULL);
        }
    }
    double checksum = 0;
    for (unsigned int i = 0; i < n; i++) {
        checksum += back[i];
    }
    printf("%d steps checked; checksum %.1f\n", steps, checksum);
    if (argc > 3 && strcmp(argv[3], "fault") == 0) {
        /* far past the allocation, where nothing is mapped; the context is not usable after it on a GPU */
        CUdeviceptr nowhere = state + (1ull << 40);
        void *faulting[] = {&nowhere, &n, &n};
        const char *launched = "?";
        const char *synchronized = "?";
        cuGetErrorName(cuLaunchKernel(relax, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, faulting, NULL), &launched);
        cuGetErrorName(cuCtxSynchronize(), &synchronized);
        printf("a kernel on memory the program does not have: launch %s, next synchronize %s\n", launched,
               synchronized);
        return 0;
    }
    CHECK(cuMemFree(state));
    CHECK(cuModuleUnload(module));
    free(host);
    free(back);
    return 0;
}
