/* Served on a vGPU: initialisation, devices (device k is vGPU k) and contexts (one per vGPU). */
#include "serving.h"

#include <stdatomic.h>

#include <string.h>

static int initialised;

/* The vGPU of a device number: opened, as its first use needs the GPU behind it. */
static CUresult opened_device(CUdevice_v1 dev, struct vgpu_device **device)
{
    if (!initialised) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    *device = vgpu_device_at(dev);
    if (*device == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    return vgpu_open_locking(*device);
}

CUresult vgpu_served_cuInit(unsigned int Flags)
{
    if (Flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (vgpu_device_count() == 0) {
        return CUDA_ERROR_NO_DEVICE; /* the plan could not be read: said at load */
    }
    initialised = 1;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *driverVersion = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuDeviceGetCount(int *count)
{
    if (count == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!initialised) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    *count = vgpu_device_count();
    return CUDA_SUCCESS;
}

/* Whether ordinal names a vGPU of the program's, once cuInit has run. */
static CUresult known_device(int ordinal)
{
    if (!initialised) {
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    return vgpu_device_at(ordinal) == NULL ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult vgpu_served_cuDeviceGet(CUdevice_v1 *device, int ordinal)
{
    if (device == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = known_device(ordinal);
    if (result == CUDA_SUCCESS) {
        *device = ordinal;
    }
    return result;
}

CUresult vgpu_served_cuDeviceGetName(char *name, int len, CUdevice_v1 dev)
{
    struct vgpu_device *device;
    if (name == NULL || len <= 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = opened_device(dev, &device);
    if (result == CUDA_SUCCESS) {
        strncpy(name, device->name, (size_t)len - 1);
        name[len - 1] = '\0';
    }
    return result;
}

CUresult vgpu_served_cuDeviceTotalMem(size_t *bytes, CUdevice_v1 dev)
{
    struct vgpu_device *device;
    if (bytes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = opened_device(dev, &device);
    if (result == CUDA_SUCCESS) {
        *bytes = device->total_memory;
    }
    return result;
}

CUresult vgpu_served_cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice_v1 dev)
{
    struct vgpu_device *device;
    if (pi == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = opened_device(dev, &device);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    /* a GPU's attributes are its own: kept until the vGPU moves (PyTorch asks some at every step) */
    _Atomic uint64_t *kept = (unsigned)attrib < CU_DEVICE_ATTRIBUTE_MAX ? &device->kept_attributes[attrib] : NULL;
    unsigned tag = kept != NULL ? vgpu_kept_tag(device) : 0;
    if (vgpu_kept_answer(kept, tag, pi)) {
        return CUDA_SUCCESS;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_DEVICE_GET_ATTRIBUTE);
    vgpu_put_u32(&request, (uint32_t)attrib);
    struct vgpu_reply reply;
    result = vgpu_locked_call(device, &request, &reply);
    if (result == CUDA_SUCCESS) {
        *pi = (int)vgpu_get_u32(&reply);
        result = vgpu_reply_ok(&reply);
        vgpu_reply_free(&reply);
    }
    if (result == CUDA_SUCCESS) {
        vgpu_keep_answer(kept, tag, *pi);
    }
    return result;
}

CUresult vgpu_served_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice_v1 dev)
{
    struct vgpu_device *device;
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = opened_device(dev, &device);
    if (result == CUDA_SUCCESS) {
        __atomic_add_fetch(&device->primary_retains, 1, __ATOMIC_RELAXED);
        *pctx = (CUcontext)vgpu_primary_context(device);
    }
    return result;
}

CUresult vgpu_served_cuDevicePrimaryCtxRelease(CUdevice_v1 dev)
{
    struct vgpu_device *device = vgpu_device_at(dev);
    if (device == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    /* the vGPU stays open until the program ends: its work may still be referenced by other threads */
    return __atomic_sub_fetch(&device->primary_retains, 1, __ATOMIC_RELAXED) < 0 ? CUDA_ERROR_INVALID_CONTEXT
                                                                                 : CUDA_SUCCESS;
}

CUresult vgpu_served_cuDevicePrimaryCtxReset(CUdevice_v1 dev)
{
    return vgpu_device_at(dev) == NULL ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult vgpu_served_cuDevicePrimaryCtxSetFlags(CUdevice_v1 dev, unsigned int flags)
{
    (void)flags; /* scheduling hints of the host thread: the vGPU's backend schedules its own */
    return vgpu_device_at(dev) == NULL ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

CUresult vgpu_served_cuDevicePrimaryCtxGetState(CUdevice_v1 dev, unsigned int *flags, int *active)
{
    struct vgpu_device *device = vgpu_device_at(dev);
    if (flags == NULL || active == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (device == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *flags = 0;
    *active = __atomic_load_n(&device->primary_retains, __ATOMIC_RELAXED) > 0;
    return CUDA_SUCCESS;
}

/* No vGPU reaches another's memory (peer access is refused: vGPUs may live on different nodes), so a program that asks
   first copies through the host. */
CUresult vgpu_served_cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice_v1 dev, CUdevice_v1 peerDev)
{
    if (canAccessPeer == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (vgpu_device_at(dev) == NULL || vgpu_device_at(peerDev) == NULL) {
        return CUDA_ERROR_INVALID_DEVICE;
    }
    *canAccessPeer = 0;
    return CUDA_SUCCESS;
}

/* A context's cache preference is a preference the backend behind the vGPU may take or leave, as the driver may: kept
   per vGPU so that it is answered back. */
CUresult vgpu_served_cuCtxSetCacheConfig(CUfunc_cache config)
{
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (device != NULL) {
        atomic_store(&device->cache_config, (int)config);
    }
    return result;
}

CUresult vgpu_served_cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    if (pconfig == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (device != NULL) {
        *pconfig = (CUfunc_cache)atomic_load(&device->cache_config);
    }
    return result;
}

CUresult vgpu_served_cuCtxSetCurrent(CUcontext ctx)
{
    struct vgpu_handle *context = NULL;
    if (ctx != NULL && (context = vgpu_handle(ctx, VGPU_CONTEXT)) == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    vgpu_set_current(context);
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuCtxGetCurrent(CUcontext *pctx)
{
    if (pctx == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pctx = (CUcontext)vgpu_get_current();
    return CUDA_SUCCESS;
}

/* The program's contexts are the vGPUs' primary contexts: a stack of one is all it can push. */
CUresult vgpu_served_cuCtxPushCurrent(CUcontext ctx)
{
    return vgpu_served_cuCtxSetCurrent(ctx);
}

CUresult vgpu_served_cuCtxPopCurrent(CUcontext *pctx)
{
    if (pctx != NULL) {
        *pctx = (CUcontext)vgpu_get_current();
    }
    vgpu_set_current(NULL);
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuCtxGetDevice(CUdevice *device, CUcontext ctx)
{
    struct vgpu_handle *context = ctx != NULL ? vgpu_handle(ctx, VGPU_CONTEXT) : vgpu_get_current();
    if (device == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (context == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    *device = context->device->ordinal;
    return CUDA_SUCCESS;
}

/* A vGPU has one context, so its id is the vGPU's number + 1 (ids are never 0); it stays when the vGPU moves. */
CUresult vgpu_served_cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    CUdevice device = 0;
    if (ctxId == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = vgpu_served_cuCtxGetDevice(&device, ctx);
    if (result == CUDA_SUCCESS) {
        *ctxId = (unsigned long long)device + 1;
    }
    return result;
}

CUresult vgpu_served_cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    CUdevice device = 0;
    if (version == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = vgpu_served_cuCtxGetDevice(&device, ctx);
    if (result == CUDA_SUCCESS) {
        *version = 3020; /* the API version of a context any CUDA since 3.2 creates, a vGPU's primary one too */
    }
    return result;
}

CUresult vgpu_served_cuCtxGetDevice_v2000(CUdevice_v1 *device)
{
    return vgpu_served_cuCtxGetDevice(device, NULL);
}

CUresult vgpu_served_cuCtxSynchronize(CUcontext ctx)
{
    struct vgpu_handle *context = ctx != NULL ? vgpu_handle(ctx, VGPU_CONTEXT) : vgpu_get_current();
    if (context == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    CUresult result = vgpu_open_locking(context->device);
    if (result != CUDA_SUCCESS || vgpu_direct_synchronize(context->device, NULL, 1, &result)) {
        return result;
    }
    int mark = vgpu_direct_sync_mark(context->device);
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_CTX_SYNCHRONIZE);
    result = vgpu_locked_call(context->device, &request, NULL);
    vgpu_direct_synchronized(context->device, mark);
    return result;
}

CUresult vgpu_served_cuCtxSynchronize_v2000(void)
{
    return vgpu_served_cuCtxSynchronize(NULL);
}

/* A vGPU's identity is its own, not the GPU's behind it (which changes when the vGPU moves): "vgpu", then its
   index, the rest zero. */
CUresult vgpu_served_cuDeviceGetUuid(CUuuid *uuid, CUdevice_v1 dev)
{
    if (uuid == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = known_device(dev);
    if (result == CUDA_SUCCESS) {
        memset(uuid, 0, sizeof *uuid);
        memcpy(uuid->bytes, "vgpu", 4);
        uuid->bytes[15] = (char)dev;
    }
    return result;
}

/* The context limits the vGPU's worker keeps (CUDA's numbers): a kernel's stack, the device-side printf FIFO and
   malloc heap; and whether the context is shared with graphics (never, answered here). The others (L2 fetch
   granularity, persisting L2, the device runtime's, CIG's shared memory) are refused naming them. */
static CUresult worker_limit(CUlimit limit)
{
    if (limit == CU_LIMIT_STACK_SIZE || limit == CU_LIMIT_PRINTF_FIFO_SIZE || limit == CU_LIMIT_MALLOC_HEAP_SIZE) {
        return CUDA_SUCCESS;
    }
    vgpu_say("context limit %d is not kept on a vGPU (its stack, printf FIFO and malloc heap sizes are)", (int)limit);
    return CUDA_ERROR_UNSUPPORTED_LIMIT;
}

CUresult vgpu_served_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    if (pvalue == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (limit == CU_LIMIT_CIG_ENABLED) {
        if (vgpu_get_current() == NULL) {
            return CUDA_ERROR_INVALID_CONTEXT;
        }
        *pvalue = 0; /* a vGPU's context is never one shared with graphics (CIG); cuBLASLt asks */
        return CUDA_SUCCESS;
    }
    CUresult result = worker_limit(limit);
    struct vgpu_device *device = result == CUDA_SUCCESS ? vgpu_current_device(&result) : NULL;
    if (device == NULL) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_CTX_GET_LIMIT);
    vgpu_put_u32(&request, (uint32_t)limit);
    struct vgpu_reply reply;
    result = vgpu_locked_call(device, &request, &reply);
    if (result == CUDA_SUCCESS) {
        *pvalue = (size_t)vgpu_get_u64(&reply);
        result = vgpu_reply_ok(&reply);
        vgpu_reply_free(&reply);
    }
    return result;
}

CUresult vgpu_served_cuCtxSetLimit(CUlimit limit, size_t value)
{
    CUresult result = worker_limit(limit);
    struct vgpu_device *device = result == CUDA_SUCCESS ? vgpu_current_device(&result) : NULL;
    if (device == NULL) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_CTX_SET_LIMIT);
    vgpu_put_u32(&request, (uint32_t)limit);
    vgpu_put_u64(&request, (uint64_t)value);
    return vgpu_locked_call(device, &request, NULL);
}
