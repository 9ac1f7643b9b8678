/*
 * Served on a vGPU: modules and kernels. An image is sent whole to the vGPU's backend, which loads it
 * as the driver would (PTX is compiled for the GPU behind the vGPU); a kernel's parameters are sent as
 * the bytes the module declares for each, in the sizes the worker read from the module.
 */
#include "serving.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_MAGIC 0xba55ed50u

/* A fatbin: its header says how long it is. */
static size_t fatbin_bytes(const uint8_t *image)
{
    uint32_t magic;
    uint16_t header_size;
    uint64_t files_size;
    memcpy(&magic, image, sizeof magic);
    memcpy(&header_size, image + 6, sizeof header_size);
    memcpy(&files_size, image + 8, sizeof files_size);
    return magic == FATBIN_MAGIC ? header_size + (size_t)files_size : 0;
}

/* An ELF (a cubin): up to the end of its section and program header tables. */
static size_t elf_bytes(const uint8_t *image)
{
    uint64_t section_headers, program_headers;
    uint16_t program_entry, program_count, section_entry, section_count;
    memcpy(&program_headers, image + 0x20, 8);
    memcpy(&section_headers, image + 0x28, 8);
    memcpy(&program_entry, image + 0x36, 2);
    memcpy(&program_count, image + 0x38, 2);
    memcpy(&section_entry, image + 0x3a, 2);
    memcpy(&section_count, image + 0x3c, 2);
    uint64_t sections_end = section_headers + (uint64_t)section_entry * section_count;
    uint64_t programs_end = program_headers + (uint64_t)program_entry * program_count;
    return (size_t)(sections_end > programs_end ? sections_end : programs_end);
}

size_t vgpu_image_bytes(const void **image)
{
    const uint8_t *bytes = *image;
    uint32_t magic;
    memcpy(&magic, bytes, sizeof magic);
    if (magic == FATBIN_WRAPPER_MAGIC) {
        const void *fatbin;
        memcpy(&fatbin, bytes + 8, sizeof fatbin);
        *image = fatbin;
        return fatbin_bytes(fatbin);
    }
    if (magic == FATBIN_MAGIC) {
        return fatbin_bytes(bytes);
    }
    if (memcmp(bytes, "\177ELF", 4) == 0 && bytes[4] == 2) {
        return elf_bytes(bytes);
    }
    return strlen((const char *)bytes) + 1; /* PTX: text, NUL-terminated */
}

CUresult vgpu_load_module(struct vgpu_device *device, const void *image, size_t bytes, struct vgpu_handle **module)
{
    if (bytes == 0 || bytes > VGPU_WIRE_MAX_MODULE_IMAGE_BYTES) {
        return bytes == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    int id = vgpu_next_remote_id(device);
    struct vgpu_handle *handle = vgpu_new_handle(VGPU_MODULE, device, id);
    if (handle == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MODULE_LOAD);
    vgpu_put_u32(&request, (uint32_t)id);
    vgpu_put_bytes(&request, image, bytes);
    CUresult result = vgpu_locked_call(device, &request, NULL);
    if (result != CUDA_SUCCESS) {
        vgpu_free_handle(handle);
        return result;
    }
    *module = handle;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuModuleLoadData(CUmodule *module, const void *image)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (module == NULL || image == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (device == NULL) {
        return result;
    }
    size_t bytes = vgpu_image_bytes(&image);
    return vgpu_load_module(device, image, bytes, (struct vgpu_handle **)module);
}

CUresult vgpu_served_cuModuleUnload(CUmodule hmod)
{
    struct vgpu_handle *module = vgpu_handle(hmod, VGPU_MODULE);
    if (module == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MODULE_UNLOAD);
    vgpu_put_u32(&request, (uint32_t)module->remote_id);
    CUresult result = vgpu_locked_call(module->device, &request, NULL);
    if (result == CUDA_SUCCESS) {
        vgpu_forget_module_variables(module->device, module->remote_id);
        vgpu_free_handle(module); /* its functions' handles stay; the worker refuses their launches */
    }
    return result;
}

/* A module's kernel names beyond this many, or one longer than this, are not taken from the worker's answer. */
#define MODULE_KERNELS_MAX 65536
#define KERNEL_NAME_BYTES 4096

static atomic_int kernel_listing_failure_said;

/* The names of module's kernels, asked of the worker, in *names (each and the array malloc'd): their count, or -1. */
static int module_kernel_names(struct vgpu_handle *module, char ***names)
{
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MODULE_KERNEL_NAMES);
    vgpu_put_u32(&request, (uint32_t)module->remote_id);
    struct vgpu_reply reply;
    if (vgpu_locked_call(module->device, &request, &reply) != CUDA_SUCCESS) {
        return -1;
    }
    uint32_t count = vgpu_get_u32(&reply);
    char **listed = count <= MODULE_KERNELS_MAX ? calloc(count > 0 ? count : 1, sizeof *listed) : NULL;
    int complete = listed != NULL;
    for (uint32_t i = 0; i < count && complete; i++) {
        char name[KERNEL_NAME_BYTES];
        vgpu_get_string(&reply, name, sizeof name);
        listed[i] = strlen(name) < sizeof name - 1 ? strdup(name) : NULL; /* a name that filled it may be cut */
        complete = listed[i] != NULL;
    }
    complete = complete && vgpu_reply_ok(&reply) == CUDA_SUCCESS;
    vgpu_reply_free(&reply);
    if (!complete) {
        for (uint32_t i = 0; listed != NULL && i < count; i++) {
            free(listed[i]);
        }
        free(listed);
        return -1;
    }
    *names = listed;
    return (int)count;
}

int vgpu_each_module_kernel(CUmodule handle, void (*receive)(void *to, CUfunction function), void *to)
{
    struct vgpu_handle *module = vgpu_handle(handle, VGPU_MODULE);
    char **names = NULL;
    int count = module == NULL ? -1 : module_kernel_names(module, &names);
    int handed = 0;
    for (int i = 0; i < count; i++) {
        CUfunction function = NULL;
        if (handed == i && vgpu_served_cuModuleGetFunction(&function, handle, names[i]) == CUDA_SUCCESS) {
            receive(to, function);
            handed++;
        }
        free(names[i]);
    }
    free(names);
    if (count < 0 || handed != count) {
        if (!atomic_exchange(&kernel_listing_failure_said, 1)) {
            vgpu_say("the kernels of a module could not be listed on its vGPU (%s)",
                     module == NULL ? "it is no module of a vGPU" : "the vGPU's backend could not list or find them");
        }
        return -1;
    }
    return count;
}

CUresult vgpu_served_cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    struct vgpu_handle *module = vgpu_handle(hmod, VGPU_MODULE);
    if (hfunc == NULL || name == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (module == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_device *device = module->device;
    int id = vgpu_next_remote_id(device);
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MODULE_GET_FUNCTION);
    vgpu_put_u32(&request, (uint32_t)module->remote_id);
    vgpu_put_u32(&request, (uint32_t)id);
    vgpu_put_string(&request, name);
    struct vgpu_reply reply;
    CUresult result = vgpu_locked_call(device, &request, &reply);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    struct vgpu_handle *function = vgpu_new_handle(VGPU_FUNCTION, device, id);
    int count = vgpu_get_u16(&reply);
    int *sizes = calloc(count > 0 ? (size_t)count : 1, sizeof *sizes);
    for (int i = 0; i < count && sizes != NULL; i++) {
        sizes[i] = (int)vgpu_get_u32(&reply);
    }
    result = vgpu_reply_ok(&reply);
    vgpu_reply_free(&reply);
    if (function == NULL || sizes == NULL || result != CUDA_SUCCESS) {
        free(sizes);
        if (function != NULL) {
            vgpu_free_handle(function);
        }
        return result != CUDA_SUCCESS ? result : CUDA_ERROR_OUT_OF_MEMORY;
    }
    function->parameter_count = count;
    function->parameter_sizes = sizes;
    *hfunc = (CUfunction)function;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuModuleGetGlobal(CUdeviceptr_v2 *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    struct vgpu_handle *module = vgpu_handle(hmod, VGPU_MODULE);
    if (name == NULL || (dptr == NULL && bytes == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (module == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MODULE_GET_GLOBAL);
    vgpu_put_u32(&request, (uint32_t)module->remote_id);
    vgpu_put_string(&request, name);
    struct vgpu_reply reply;
    CUresult result = vgpu_locked_call(module->device, &request, &reply);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    uint64_t address = vgpu_get_u64(&reply);
    uint64_t size = vgpu_get_u64(&reply);
    result = vgpu_reply_ok(&reply);
    vgpu_reply_free(&reply);
    if (result == CUDA_SUCCESS && vgpu_keep_module_variable(module->device, module->remote_id, address, size) != 0) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (result == CUDA_SUCCESS) {
        if (dptr != NULL) {
            *dptr = address;
        }
        if (bytes != NULL) {
            *bytes = size;
        }
    }
    return result;
}

/* CUDA_ERROR_INVALID_VALUE when a launch of function asks for more dynamic shared memory than it may (48 KiB unless
   the program raised it with cuFuncSetAttribute), as the driver answers the launch; the limit is asked of the
   worker once, at the first launch that asks for any. */
static CUresult within_dynamic_shared(struct vgpu_handle *function, unsigned int bytes)
{
    if (bytes == 0) {
        return CUDA_SUCCESS;
    }
    int limit = vgpu_known_dynamic_shared(function);
    if (limit < 0) {
        CUresult result =
            vgpu_function_attribute(function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &limit);
        if (result != CUDA_SUCCESS) {
            return result;
        }
        vgpu_know_dynamic_shared(function, limit);
    }
    return bytes > (unsigned int)limit ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* A launch of function (a CUfunction, or a CUkernel's function on the current vGPU), for cuLaunchKernel and
   cuLaunchKernelEx: sent without waiting, as a GPU runs it after the call returns. */
static CUresult launch(const void *f, const unsigned int grid[3], const unsigned int block[3],
                       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra,
                       const char *call)
{
    struct vgpu_handle *function = vgpu_launchable(f);
    if (function == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (extra != NULL) {
        vgpu_say("%s with parameters packed in extra is not served on a vGPU yet (kernelParams is)", call);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (function->parameter_count > 0 && kernelParams == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* What the driver refuses when it is called (CUDA_ERROR_INVALID_VALUE), refused here too, since the worker's
       refusal would come at the next synchronizing call: a dimension below 1 or above the wire's int32, and a block
       larger than the device runs (the H200's driver, CUDA 13, 580, answers CUDA_ERROR_INVALID_VALUE, which the
       runtime reports as cudaErrorInvalidValue). */
    for (int i = 0; i < 3; i++) {
        if (grid[i] == 0 || block[i] == 0 || grid[i] > INT32_MAX || block[i] > INT32_MAX) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    if ((uint64_t)block[0] * block[1] * block[2] > (uint64_t)function->device->max_threads_per_block) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = within_dynamic_shared(function, sharedMemBytes);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    if (vgpu_capturing(hStream)) {
        struct vgpu_node node = {.kind = VGPU_NODE_LAUNCH, .function = function, .shared_bytes = sharedMemBytes};
        memcpy(node.grid, grid, sizeof node.grid);
        memcpy(node.block, block, sizeof node.block);
        return vgpu_capture(hStream, &node, kernelParams);
    }
    int stream = 0;
    result = vgpu_stream_id(hStream, function->device, &stream);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    if (vgpu_direct_launch(function, grid, block, sharedMemBytes, hStream, kernelParams, &result)) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_LAUNCH_KERNEL);
    vgpu_put_u32(&request, (uint32_t)function->remote_id);
    for (int i = 0; i < 3; i++) {
        vgpu_put_u32(&request, grid[i]);
    }
    for (int i = 0; i < 3; i++) {
        vgpu_put_u32(&request, block[i]);
    }
    vgpu_put_u32(&request, sharedMemBytes);
    vgpu_put_u32(&request, (uint32_t)stream);
    vgpu_put_u16(&request, (uint16_t)function->parameter_count);
    for (int i = 0; i < function->parameter_count; i++) {
        vgpu_put_u8(&request, VGPU_WIRE_ARG_BYTES);
        vgpu_put_u16(&request, (uint16_t)function->parameter_sizes[i]);
        vgpu_put_bytes(&request, kernelParams[i], (size_t)function->parameter_sizes[i]);
    }
    return vgpu_locked_send_async(function->device, &request);
}

CUresult vgpu_served_cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
                                    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
                                    unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
{
    const unsigned int grid[3] = {gridDimX, gridDimY, gridDimZ};
    const unsigned int block[3] = {blockDimX, blockDimY, blockDimZ};
    return launch(f, grid, block, sharedMemBytes, hStream, kernelParams, extra, "cuLaunchKernel");
}

/* A launch attribute vgpu cannot honour: CUDA_ERROR_NOT_SUPPORTED, and a line naming it the first time. */
static CUresult refused_attribute(CUlaunchAttributeID id, const char *name, const char *why)
{
    static atomic_int said[CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING + 1];
    if (!atomic_exchange(&said[id], 1)) {
        vgpu_say("cuLaunchKernelEx with %s is refused on a vGPU: %s", name, why);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Whether a launch on a vGPU can mean what attribute asks: CUDA_SUCCESS for the hints a launch may ignore (the
   driver's own scheduling, caching and priority preferences) and for what every launch on a vGPU already is (in its
   stream's order, started after the work before it is done); CUDA_ERROR_NOT_SUPPORTED naming it for what needs the
   GPU's own launch; CUDA_ERROR_INVALID_VALUE for what CUDA does not define. */
static CUresult launch_attribute(const CUlaunchAttribute *attribute)
{
    const CUlaunchAttributeValue *value = &attribute->value;
    switch (attribute->id) {
    case CU_LAUNCH_ATTRIBUTE_IGNORE:
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
    case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
    case CU_LAUNCH_ATTRIBUTE_PRIORITY:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
    case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
    case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
        /* lets the kernel start before the previous one is done; starting after it is what the kernel waits for */
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
        /* a preference the driver may fall back from, to the cluster dimension (a vGPU's: one block) */
        return CUDA_SUCCESS;
    case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
        return value->cooperative == 0
                   ? CUDA_SUCCESS
                   : refused_attribute(attribute->id, "CU_LAUNCH_ATTRIBUTE_COOPERATIVE",
                                       "a cooperative launch needs all its blocks resident on the GPU at once");
    case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
        if (value->clusterDim.x == 0 || value->clusterDim.y == 0 || value->clusterDim.z == 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        return value->clusterDim.x * value->clusterDim.y * value->clusterDim.z == 1
                   ? CUDA_SUCCESS /* a cluster of one block is a block */
                   : refused_attribute(attribute->id, "CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION above 1x1x1",
                                       "vgpu does not launch thread block clusters");
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
        return refused_attribute(attribute->id, "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT",
                                 "events the kernel triggers while it runs are not served yet");
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
        return refused_attribute(attribute->id, "CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT",
                                 "events recorded when the kernel's blocks have started are not served yet");
    case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
        return refused_attribute(attribute->id, "CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE",
                                 "it is for CUDA graphs, which are not served");
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult vgpu_served_cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    if (config == NULL || (config->numAttrs > 0 && config->attrs == NULL)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned int i = 0; i < config->numAttrs; i++) {
        CUresult result = launch_attribute(&config->attrs[i]);
        if (result != CUDA_SUCCESS) {
            return result;
        }
    }
    const unsigned int grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    const unsigned int block[3] = {config->blockDimX, config->blockDimY, config->blockDimZ};
    return launch(f, grid, block, config->sharedMemBytes, config->hStream, kernelParams, extra, "cuLaunchKernelEx");
}

CUresult vgpu_served_cuModuleGetLoadingMode(CUmoduleLoadingMode *mode)
{
    if (mode == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *mode = CU_MODULE_LAZY_LOADING;
    return CUDA_SUCCESS;
}
