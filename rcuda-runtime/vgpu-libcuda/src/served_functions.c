/*
 * Served on a vGPU: a kernel's attributes (cuFuncGetAttribute, cuFuncSetAttribute, and the cuKernel* forms the CUDA
 * runtime calls for cudaFuncGetAttributes and cudaFuncSetAttribute). The vGPU's backend answers what it knows of the
 * kernel (its registers, shared memory, the dynamic shared memory it may ask for); vgpu answers itself the attributes
 * no backend varies, as a vGPU launches no thread block clusters.
 */
#include "serving.h"

#include <stdatomic.h>

/* The attributes the worker knows (vgpu-gpu-api's FunctionAttribute): CUDA's numbers up to this one, but 7. */
#define LAST_BACKEND_ATTRIBUTE CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT

/* An attribute vgpu answers itself: 1 with *value set, 0 when the backend answers it. */
static int answered_here(CUfunction_attribute attribute, int *value)
{
    switch (attribute) {
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: /* the backend compiles the kernel with the default caching of loads */
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        *value = 0; /* no clusters on a vGPU: none required, the default policy */
        return 1;
    default:
        return 0;
    }
}

/* Whether the program may change attribute (cuFuncSetAttribute): such an answer is kept until the next set on the vGPU. */
static int settable(CUfunction_attribute attribute)
{
    return attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES ||
           attribute == CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
}

CUresult vgpu_function_attribute(struct vgpu_handle *function, CUfunction_attribute attribute, int *value)
{
    if (answered_here(attribute, value)) {
        return CUDA_SUCCESS;
    }
    if ((int)attribute < 0 || attribute > LAST_BACKEND_ATTRIBUTE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* kept until the vGPU moves (the occupancy calls ask them each time); one the program may set, until it sets one */
    _Atomic uint64_t *kept = &function->kept_attributes[attribute];
    unsigned tag = settable(attribute) ? vgpu_kept_setting_tag(function->device) : vgpu_kept_tag(function->device);
    if (vgpu_kept_answer(kept, tag, value)) {
        return CUDA_SUCCESS;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_FUNC_GET_ATTRIBUTE);
    vgpu_put_u32(&request, (uint32_t)function->remote_id);
    vgpu_put_u32(&request, (uint32_t)attribute);
    struct vgpu_reply reply;
    CUresult result = vgpu_locked_call(function->device, &request, &reply);
    if (result == CUDA_SUCCESS) {
        *value = (int)vgpu_get_u32(&reply);
        result = vgpu_reply_ok(&reply);
        vgpu_reply_free(&reply);
    }
    if (result == CUDA_SUCCESS) {
        vgpu_keep_answer(kept, tag, *value);
    }
    return result;
}

int vgpu_known_dynamic_shared(struct vgpu_handle *function)
{
    return __atomic_load_n(&function->max_dynamic_shared, __ATOMIC_ACQUIRE);
}

void vgpu_know_dynamic_shared(struct vgpu_handle *function, int bytes)
{
    __atomic_store_n(&function->max_dynamic_shared, bytes, __ATOMIC_RELEASE);
}

static atomic_int cluster_refusal_said;

static CUresult set_function_attribute(struct vgpu_handle *function, CUfunction_attribute attribute, int value)
{
    switch (attribute) {
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
        return CUDA_SUCCESS; /* permissions and preferences for clusters, which no launch on a vGPU forms */
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        if (value < 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (value <= 1) {
            return CUDA_SUCCESS; /* a cluster of one block is a block */
        }
        if (!atomic_exchange(&cluster_refusal_said, 1)) {
            vgpu_say("cuFuncSetAttribute of a required cluster size above 1 is refused on a vGPU: vgpu does not launch"
                     " thread block clusters");
        }
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        break;
    }
    if ((int)attribute < 0 || attribute > LAST_BACKEND_ATTRIBUTE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_FUNC_SET_ATTRIBUTE);
    vgpu_put_u32(&request, (uint32_t)function->remote_id);
    vgpu_put_u32(&request, (uint32_t)attribute);
    vgpu_put_u32(&request, (uint32_t)value);
    CUresult result = vgpu_locked_call(function->device, &request, NULL);
    if (result == CUDA_SUCCESS) {
        vgpu_settings_changed(function->device); /* after the set: an answer asked meanwhile is kept under the old tag */
    }
    if (result == CUDA_SUCCESS && attribute == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
        vgpu_know_dynamic_shared(function, value);
    }
    return result;
}

CUresult vgpu_served_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (pi == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_handle *function = vgpu_launchable(hfunc);
    return function == NULL ? CUDA_ERROR_INVALID_HANDLE : vgpu_function_attribute(function, attrib, pi);
}

CUresult vgpu_served_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    struct vgpu_handle *function = vgpu_launchable(hfunc);
    return function == NULL ? CUDA_ERROR_INVALID_HANDLE : set_function_attribute(function, attrib, value);
}

/* The cache configuration is a preference the driver may ignore: the backend behind the vGPU chooses its own. */
static CUresult cache_preference(CUfunc_cache config)
{
    return (int)config < CU_FUNC_CACHE_PREFER_NONE || config > CU_FUNC_CACHE_PREFER_EQUAL ? CUDA_ERROR_INVALID_VALUE
                                                                                         : CUDA_SUCCESS;
}

CUresult vgpu_served_cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config)
{
    return vgpu_launchable(hfunc) == NULL ? CUDA_ERROR_INVALID_HANDLE : cache_preference(config);
}

/* A kernel's function on the vGPU of device number dev. */
static CUresult kernel_function_on(CUkernel kernel, CUdevice dev, struct vgpu_handle **function)
{
    CUdevice checked;
    CUresult result = vgpu_served_cuDeviceGet(&checked, dev);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    struct vgpu_device *device = vgpu_device_at(dev);
    result = vgpu_open_locking(device);
    return result != CUDA_SUCCESS ? result : vgpu_kernel_function_on(kernel, device, function);
}

CUresult vgpu_served_cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    if (pi == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_handle *function = NULL;
    CUresult result = kernel_function_on(kernel, dev, &function);
    return result != CUDA_SUCCESS ? result : vgpu_function_attribute(function, attrib, pi);
}

CUresult vgpu_served_cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    struct vgpu_handle *function = NULL;
    CUresult result = kernel_function_on(kernel, dev, &function);
    return result != CUDA_SUCCESS ? result : set_function_attribute(function, attrib, val);
}

CUresult vgpu_served_cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev)
{
    struct vgpu_handle *function = NULL;
    CUresult result = kernel_function_on(kernel, dev, &function);
    return result != CUDA_SUCCESS ? result : cache_preference(config);
}
