/*
 * The CUDA driver API as programs use it directly, linked with -lcuda: a module loaded from PTX
 * text, a kernel launched with cuLaunchKernel, a module global, copies. Prints what it computed.
 */
#include "driver_check.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

/* y[i] = a * x[i] + y[i] + offset, with offset a module global set from the host */
static const char ptx[] =
    ".version 7.0\n"
    ".target sm_80\n"
    ".address_size 64\n"
    ".global .align 4 .f32 offset;\n"
    ".visible .entry offset_saxpy(.param .u64 x, .param .u64 y, .param .f32 a, .param .u32 n)\n"
    "{\n"
    "  .reg .pred p; .reg .b32 r<6>; .reg .f32 f<6>; .reg .b64 rd<8>;\n"
    "  ld.param.u64 rd1, [x]; ld.param.u64 rd2, [y]; ld.param.f32 f1, [a]; ld.param.u32 r1, [n];\n"
    "  mov.u32 r2, %ctaid.x; mov.u32 r3, %ntid.x; mov.u32 r4, %tid.x; mad.lo.s32 r5, r2, r3, r4;\n"
    "  setp.ge.u32 p, r5, r1; @p bra done;\n"
    "  cvta.to.global.u64 rd3, rd1; cvta.to.global.u64 rd4, rd2; mul.wide.u32 rd5, r5, 4;\n"
    "  add.s64 rd6, rd3, rd5; add.s64 rd7, rd4, rd5;\n"
    "  ld.global.f32 f2, [rd6]; ld.global.f32 f3, [rd7]; ld.global.f32 f5, [offset];\n"
    "  fma.rn.f32 f4, f1, f2, f3; add.f32 f4, f4, f5; st.global.f32 [rd7], f4;\n"
    "done:\n"
    "  ret;\n"
    "}\n";

int main(void)
{
    CHECK(cuInit(0));
    int count = 0;
    CHECK(cuDeviceGetCount(&count));
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));
    int major = 0;
    CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
    printf("devices %d, compute capability >= 8: %s\n", count, major >= 8 ? "yes" : "no");
    CUcontext context;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));

    CUmodule module;
    CHECK(cuModuleLoadData(&module, ptx));
    CUfunction saxpy;
    CHECK(cuModuleGetFunction(&saxpy, module, "offset_saxpy"));
    CUdeviceptr offset;
    size_t offset_bytes = 0;
    CHECK(cuModuleGetGlobal(&offset, &offset_bytes, module, "offset"));
    float half = 0.5f;
    CHECK(cuMemcpyHtoD(offset, &half, sizeof half));

    unsigned int n = 100000;
    float *x = malloc(n * sizeof(float));
    float *y = malloc(n * sizeof(float));
    for (unsigned int i = 0; i < n; i++) {
        x[i] = (float)(i % 100);
        y[i] = 1.0f;
    }
    CUdeviceptr dx, dy;
    CHECK(cuMemAlloc(&dx, n * sizeof(float)));
    CHECK(cuMemAlloc(&dy, n * sizeof(float)));
    CHECK(cuMemcpyHtoD(dx, x, n * sizeof(float)));
    CHECK(cuMemcpyHtoD(dy, y, n * sizeof(float)));
    float a = 2.0f;
    void *arguments[] = {&dx, &dy, &a, &n};
    CHECK(cuLaunchKernel(saxpy, (n + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, arguments, NULL));
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(y, dy, n * sizeof(float)));
    double total = 0;
    for (unsigned int i = 0; i < n; i++) {
        total += y[i];
    }
    printf("global of %zu bytes; saxpy total %.1f\n", offset_bytes, total);

    CUresult bad = cuMemFree(dx + 4);
    const char *bad_name = "?";
    cuGetErrorName(bad, &bad_name);
    printf("free inside an allocation: %s\n", bad_name);

    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
    CHECK(cuModuleUnload(module));
    CHECK(cuDevicePrimaryCtxRelease(device));
    free(x);
    free(y);
    printf("done\n");
    return 0;
}
