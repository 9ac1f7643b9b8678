/*
 * libnvrtc.so.12 for JCuda 12.6's NVRTC binding on a CUDA 13 machine, for testbed/gpu/jcuda-programs.sh only: plain
 * JCuda is the reference that vgpu's runs of the NVRTC test program are compared with, and its libJNvrtc needs
 * libnvrtc.so.12 with symbols of version "libnvrtc.so.12", which CUDA 13's libnvrtc.so.13 does not provide. Each
 * function jumps to the one of the same name in libnvrtc.so.13 (NVRTC's C API kept its calls' signatures); one that
 * CUDA 13 no longer has answers NVRTC_ERROR_INTERNAL_ERROR. vgpu itself never loads this: it uses libnvrtc.so.13.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#define NVRTC_ERROR_INTERNAL_ERROR 11

static int missing(void) {
    return NVRTC_ERROR_INTERNAL_ERROR;
}

/* every function libJNvrtc-12.6.0 imports */
#define NVRTC_FUNCTIONS(X) \
    X(nvrtcAddNameExpression) X(nvrtcCompileProgram) X(nvrtcCreateProgram) X(nvrtcDestroyProgram) \
    X(nvrtcGetCUBIN) X(nvrtcGetCUBINSize) X(nvrtcGetErrorString) X(nvrtcGetLTOIR) X(nvrtcGetLTOIRSize) \
    X(nvrtcGetLoweredName) X(nvrtcGetNVVM) X(nvrtcGetNVVMSize) X(nvrtcGetNumSupportedArchs) X(nvrtcGetOptiXIR) \
    X(nvrtcGetOptiXIRSize) X(nvrtcGetPTX) X(nvrtcGetPTXSize) X(nvrtcGetProgramLog) X(nvrtcGetProgramLogSize) \
    X(nvrtcGetSupportedArchs) X(nvrtcVersion)

/* a jump through a pointer forwards any arguments unchanged (x86-64) */
#define TRAMPOLINE(name) \
    void *real_##name = (void *) missing; \
    __asm__(".globl " #name "\n.type " #name ", @function\n" #name ":\n\tjmp *real_" #name "(%rip)\n");
NVRTC_FUNCTIONS(TRAMPOLINE)

__attribute__((constructor)) static void bind(void) {
    void *nvrtc13 = dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL);
    if (nvrtc13 == NULL) {
        return;
    }
#define BIND(name) { void *found = dlsym(nvrtc13, #name); if (found != NULL) real_##name = found; }
    NVRTC_FUNCTIONS(BIND)
}
