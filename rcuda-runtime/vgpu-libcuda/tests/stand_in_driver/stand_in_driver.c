/*
 * A stand-in for the node's CUDA driver, for tests on machines without a GPU (VGPU_REAL_LIBCUDA names it): one device
 * that answers what the native backend asks before it makes a context, then refuses the context with
 * CUDA_ERROR_OUT_OF_MEMORY, an answer a vGPU never gives at that point. A test that sees that refusal knows the native
 * backend's calls reached this library and not the vGPUs being served. The native backend binds every function below
 * at its start; the memory ones are never reached here and answer CUDA_ERROR_NOT_SUPPORTED.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* cuda.h is not included: the functions never reached are defined without their arguments, which it would declare */
typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_INVALID_DEVICE = 101,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_SUPPORTED = 801,
};
enum { ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1, ATTRIBUTE_WARP_SIZE = 10, ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75 };

#define EXPORT __attribute__((visibility("default")))

EXPORT CUresult cuInit(unsigned int flags)
{
    return flags == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuDriverGetVersion(int *version)
{
    *version = 13000;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count)
{
    *count = 1;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (ordinal != 0) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *device = 0;
    return CUDA_SUCCESS;
}

static CUresult answer_text(char *text, int length, const char *answer)
{
    snprintf(text, (size_t)length, "%s", answer);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int length, CUdevice device)
{
    (void)device;
    return answer_text(name, length, "vgpu's stand-in driver");
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice device)
{
    (void)device;
    *bytes = (size_t)1 << 30;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, int attribute, CUdevice device)
{
    (void)device;
    switch (attribute) {
    case ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = 9;
        break;
    case ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        *value = 1024;
        break;
    case ATTRIBUTE_WARP_SIZE:
        *value = 32;
        break;
    default:
        *value = 1;
    }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *bus, int length, CUdevice device)
{
    (void)device;
    return answer_text(bus, length, "0000:00:00.0");
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *context, CUdevice device)
{
    (void)context;
    (void)device;
    return CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **function, int version, uint64_t flags, int *status)
{
    (void)symbol;
    (void)version;
    (void)flags;
    *function = NULL;
    if (status != NULL) {
        *status = 1; /* CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND */
    }
    return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetExportTable(const void **table, const void *id)
{
    (void)id;
    *table = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* bound by the native backend at its start, never reached before the context it cannot have */
#define NOT_REACHED(name)                                                                                              \
    EXPORT CUresult name(void) { return CUDA_ERROR_NOT_SUPPORTED; }
NOT_REACHED(cuCtxGetCurrent)
NOT_REACHED(cuCtxSetCurrent)
NOT_REACHED(cuDevicePrimaryCtxRelease_v2)
NOT_REACHED(cuFuncGetParamInfo)
NOT_REACHED(cuMemAddressFree)
NOT_REACHED(cuMemAddressReserve)
NOT_REACHED(cuMemAllocHost_v2)
NOT_REACHED(cuMemCreate)
NOT_REACHED(cuMemFreeHost)
NOT_REACHED(cuMemGetAllocationGranularity)
NOT_REACHED(cuMemHostRegister_v2)
NOT_REACHED(cuMemHostUnregister)
NOT_REACHED(cuMemMap)
NOT_REACHED(cuMemRelease)
NOT_REACHED(cuMemSetAccess)
NOT_REACHED(cuMemUnmap)
NOT_REACHED(cuPointerGetAttribute)
