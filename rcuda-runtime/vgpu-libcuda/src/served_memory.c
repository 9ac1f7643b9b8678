/*
 * Served on a vGPU: memory. An allocation is placed in the vGPU's window here and sent to the worker
 * at that address, rounded up to the window's granularity (the worker's vGPU keeps it, and a
 * migration keeps it at the same address); copies and memsets go through the session.
 */
#include "serving.h"
#include "contract.h"

#include <stdlib.h>
#include <string.h>

static uint64_t granular(uint64_t bytes)
{
    return (bytes + VGPU_WINDOW_ALIGNMENT - 1) / VGPU_WINDOW_ALIGNMENT * VGPU_WINDOW_ALIGNMENT;
}

/* The first gap of the window that holds bytes (the allocations are sorted), or 0 when none does. */
static uint64_t place(const struct vgpu_device *device, uint64_t bytes, size_t *at)
{
    uint64_t start = device->window_base;
    for (size_t i = 0; i <= device->allocation_count; i++) {
        uint64_t end = i < device->allocation_count ? device->allocations[i].address
                                                    : vgpu_allocations_end(device);
        if (end - start >= bytes) {
            *at = i;
            return start;
        }
        if (i < device->allocation_count) {
            start = device->allocations[i].address + granular(device->allocations[i].bytes);
        }
    }
    return 0;
}

void *vgpu_with_room_for_one(void *items, size_t count, size_t *capacity, size_t item_bytes, size_t first)
{
    if (count < *capacity) {
        return items;
    }
    size_t grown_capacity = *capacity == 0 ? first : *capacity * 2;
    void *grown = realloc(items, grown_capacity * item_bytes);
    if (grown != NULL) {
        *capacity = grown_capacity;
    }
    return grown;
}

static int remember(struct vgpu_device *device, size_t at, uint64_t address, uint64_t bytes)
{
    struct vgpu_allocation *room = vgpu_with_room_for_one(device->allocations, device->allocation_count,
                                                          &device->allocation_capacity, sizeof *room, 64);
    if (room == NULL) {
        return -1;
    }
    device->allocations = room;
    memmove(&device->allocations[at + 1], &device->allocations[at],
            (device->allocation_count - at) * sizeof device->allocations[0]);
    device->allocations[at] = (struct vgpu_allocation){address, bytes, vgpu_next_buffer_id()};
    device->allocation_count++;
    return 0;
}

/* Whether address lies in memory, which is then *found. */
static int holds(const struct vgpu_allocation *memory, uint64_t address, struct vgpu_allocation *found)
{
    if (address >= memory->address && address - memory->address < memory->bytes) {
        *found = *memory;
        return 1;
    }
    return 0;
}

int vgpu_allocation_at(struct vgpu_device *device, uint64_t address, struct vgpu_allocation *found)
{
    int held = 0;
    pthread_mutex_lock(&device->lock);
    for (size_t i = 0; i < device->allocation_count && !held; i++) {
        held = holds(&device->allocations[i], address, found);
    }
    for (size_t i = 0; i < device->variable_count && !held; i++) {
        held = holds(&device->variables[i].memory, address, found);
    }
    pthread_mutex_unlock(&device->lock);
    return held;
}

int vgpu_keep_module_variable(struct vgpu_device *device, int module_id, uint64_t address, uint64_t bytes)
{
    pthread_mutex_lock(&device->lock);
    size_t i = 0;
    while (i < device->variable_count &&
           (device->variables[i].module_id != module_id || device->variables[i].memory.address != address)) {
        i++;
    }
    int kept = 0;
    if (i == device->variable_count) { /* not kept yet */
        struct vgpu_module_variable *room = vgpu_with_room_for_one(device->variables, device->variable_count,
                                                                   &device->variable_capacity, sizeof *room, 16);
        if (room == NULL) {
            kept = -1;
        } else {
            device->variables = room;
            device->variables[device->variable_count++] =
                (struct vgpu_module_variable){{address, bytes, vgpu_next_buffer_id()}, module_id};
        }
    }
    pthread_mutex_unlock(&device->lock);
    return kept;
}

void vgpu_forget_module_variables(struct vgpu_device *device, int module_id)
{
    pthread_mutex_lock(&device->lock);
    size_t kept = 0;
    for (size_t i = 0; i < device->variable_count; i++) {
        if (device->variables[i].module_id != module_id) {
            device->variables[kept++] = device->variables[i];
        }
    }
    device->variable_count = kept;
    pthread_mutex_unlock(&device->lock);
}

CUresult vgpu_served_cuMemAlloc(CUdeviceptr_v2 *dptr, size_t bytesize)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (dptr == NULL || bytesize == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (device == NULL) {
        return result;
    }
    pthread_mutex_lock(&device->lock);
    size_t at = 0;
    uint64_t address = place(device, granular(bytesize), &at);
    if (address == 0) {
        pthread_mutex_unlock(&device->lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MEM_ALLOC_AT);
    vgpu_put_u64(&request, address);
    vgpu_put_u64(&request, granular(bytesize));
    result = vgpu_call(device, &request, NULL);
    if (result == CUDA_SUCCESS && remember(device, at, address, bytesize) != 0) {
        result = CUDA_ERROR_OUT_OF_MEMORY; /* the worker keeps it until the program ends */
    }
    pthread_mutex_unlock(&device->lock);
    if (result == CUDA_SUCCESS) {
        *dptr = address;
    }
    return result;
}

CUresult vgpu_served_cuMemFree(CUdeviceptr_v2 dptr)
{
    if (dptr == 0) {
        return CUDA_SUCCESS; /* as the driver answers (cuBLAS frees 0 at its start) */
    }
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (device == NULL) {
        return result;
    }
    pthread_mutex_lock(&device->lock);
    size_t at = 0;
    while (at < device->allocation_count && device->allocations[at].address != dptr) {
        at++;
    }
    if (at == device->allocation_count) {
        pthread_mutex_unlock(&device->lock);
        if (vgpu_verbose) {
            vgpu_say("cuMemFree of 0x%llx, which is no allocation's start on this vGPU", (unsigned long long)dptr);
        }
        return CUDA_ERROR_INVALID_VALUE; /* as the driver: only an allocation's start frees it */
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MEM_FREE);
    vgpu_put_u64(&request, dptr);
    result = vgpu_call(device, &request, NULL);
    if (result == CUDA_SUCCESS) {
        memmove(&device->allocations[at], &device->allocations[at + 1],
                (device->allocation_count - at - 1) * sizeof device->allocations[0]);
        device->allocation_count--;
    }
    pthread_mutex_unlock(&device->lock);
    return result;
}

CUresult vgpu_served_cuMemGetInfo(size_t *free_bytes, size_t *total)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (free_bytes == NULL || total == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (device == NULL) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MEM_GET_INFO);
    struct vgpu_reply reply;
    result = vgpu_locked_call(device, &request, &reply);
    if (result == CUDA_SUCCESS) {
        *free_bytes = vgpu_get_u64(&reply);
        *total = vgpu_get_u64(&reply);
        result = vgpu_reply_ok(&reply);
        vgpu_reply_free(&reply);
    }
    return result;
}

/* A request that CUDA's asynchronous form leaves on the stream: sent without waiting in that form, answered in the
   other. */
static CUresult on_stream(struct vgpu_device *device, struct vgpu_request *request, int async)
{
    return async ? vgpu_locked_send_async(device, request) : vgpu_locked_call(device, request, NULL);
}

/* A copy between a vGPU and page-locked memory shared with the launcher: the request names the region's bytes, which
   the launcher copies in the stream's order. The synchronous form waits for its answer; the asynchronous one is sent
   without waiting, as CUDA returns before such a copy is done: the program may touch the bytes only after it has
   synchronized, and a synchronizing call is answered after the launcher took every request sent before it. */
CUresult vgpu_copy_with_region(struct vgpu_device *device, int opcode, int stream, uint64_t device_address,
                               uint32_t region, uint64_t offset, size_t bytes, int async)
{
    struct vgpu_request request;
    vgpu_request_begin(&request, opcode);
    vgpu_put_u32(&request, (uint32_t)stream);
    vgpu_put_u64(&request, device_address);
    vgpu_put_u32(&request, region);
    vgpu_put_u64(&request, offset);
    vgpu_put_u64(&request, bytes);
    return on_stream(device, &request, async);
}

/* Whether bytes at address lie in one allocation of device (or a module variable whose address the program has). */
static int holds_all(struct vgpu_device *device, uint64_t address, size_t bytes)
{
    struct vgpu_allocation found;
    return vgpu_allocation_at(device, address, &found) && bytes <= found.bytes - (address - found.address);
}

/* Bytes of the program's own memory are in the request when this returns, in either form: the synchronous form waits
   for the copy, the asynchronous one waits for nothing, as CUDA's returns once it has staged pageable memory (its
   destination checked here, as the driver checks it at the call). Shared page-locked memory's are named, and the
   asynchronous form does not wait for the copy. */
CUresult vgpu_copy_to_device(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount, CUstream hStream,
                             int async)
{
    CUresult result;
    int stream = 0;
    if (async && vgpu_capturing(hStream)) {
        const struct vgpu_node node = {
            .kind = VGPU_NODE_TO_DEVICE, .device = dstDevice, .host = (void *)srcHost, .count = ByteCount};
        return srcHost == NULL && ByteCount > 0 ? CUDA_ERROR_INVALID_VALUE : vgpu_capture(hStream, &node, NULL);
    }
    struct vgpu_device *device = vgpu_current_stream(hStream, &stream, &result);
    if (device == NULL) {
        return result;
    }
    if (srcHost == NULL && ByteCount > 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (vgpu_direct_copy_to_device(device, dstDevice, srcHost, ByteCount, hStream, async, &result)) {
        return result;
    }
    uint32_t region = 0;
    uint64_t offset = 0;
    if (ByteCount > 0 && vgpu_host_region_at(srcHost, ByteCount, &region, &offset)) {
        return vgpu_copy_with_region(device, VGPU_OP_MEMCPY_HTOD_FROM_REGION, stream, dstDevice, region, offset,
                                     ByteCount, async);
    }
    if (async && ByteCount > 0 && !holds_all(device, dstDevice, ByteCount)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&device->lock);
    result = async && ByteCount > 0 ? vgpu_send_to_device_async(device, stream, dstDevice, srcHost, ByteCount)
                                    : vgpu_send_to_device(device, dstDevice, srcHost, ByteCount);
    pthread_mutex_unlock(&device->lock);
    return result;
}

CUresult vgpu_served_cuMemcpyHtoD(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount)
{
    return vgpu_copy_to_device(dstDevice, srcHost, ByteCount, NULL, 0);
}

CUresult vgpu_served_cuMemcpyHtoDAsync(CUdeviceptr_v2 dstDevice, const void *srcHost, size_t ByteCount,
                                       CUstream hStream)
{
    return vgpu_copy_to_device(dstDevice, srcHost, ByteCount, hStream, 1);
}

/* Into the program's own memory the bytes are there when this returns, in either form; into shared page-locked
   memory the asynchronous form does not wait for them. */
CUresult vgpu_copy_from_device(void *dstHost, CUdeviceptr_v2 srcDevice, size_t ByteCount, CUstream hStream,
                               int async)
{
    CUresult result;
    int stream = 0;
    if (async && vgpu_capturing(hStream)) {
        const struct vgpu_node node = {
            .kind = VGPU_NODE_FROM_DEVICE, .source = srcDevice, .host = dstHost, .count = ByteCount};
        return dstHost == NULL && ByteCount > 0 ? CUDA_ERROR_INVALID_VALUE : vgpu_capture(hStream, &node, NULL);
    }
    struct vgpu_device *device = vgpu_current_stream(hStream, &stream, &result);
    if (device == NULL) {
        return result;
    }
    if (dstHost == NULL && ByteCount > 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (vgpu_direct_copy_from_device(device, dstHost, srcDevice, ByteCount, hStream, async, &result)) {
        return result;
    }
    uint32_t region = 0;
    uint64_t offset = 0;
    if (ByteCount > 0 && vgpu_host_region_at(dstHost, ByteCount, &region, &offset)) {
        return vgpu_copy_with_region(device, VGPU_OP_MEMCPY_DTOH_TO_REGION, stream, srcDevice, region, offset,
                                     ByteCount, async);
    }
    pthread_mutex_lock(&device->lock);
    result = vgpu_fetch_from_device(device, srcDevice, dstHost, ByteCount);
    pthread_mutex_unlock(&device->lock);
    return result;
}

CUresult vgpu_served_cuMemcpyDtoH(void *dstHost, CUdeviceptr_v2 srcDevice, size_t ByteCount)
{
    return vgpu_copy_from_device(dstHost, srcDevice, ByteCount, NULL, 0);
}

CUresult vgpu_served_cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v2 srcDevice, size_t ByteCount, CUstream hStream)
{
    return vgpu_copy_from_device(dstHost, srcDevice, ByteCount, hStream, 1);
}

CUresult vgpu_copy_on_device(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t bytes, CUstream hStream, int async)
{
    CUresult result;
    int stream = 0;
    if (async && vgpu_capturing(hStream)) {
        const struct vgpu_node node = {.kind = VGPU_NODE_ON_DEVICE, .device = dst, .source = src, .count = bytes};
        return vgpu_capture(hStream, &node, NULL);
    }
    struct vgpu_device *device = vgpu_current_stream(hStream, &stream, &result);
    if (device == NULL) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MEMCPY_DTOD);
    vgpu_put_u32(&request, (uint32_t)stream);
    vgpu_put_u64(&request, dst);
    vgpu_put_u64(&request, src);
    vgpu_put_u64(&request, bytes);
    return on_stream(device, &request, async);
}

CUresult vgpu_served_cuMemcpyDtoD(CUdeviceptr_v2 dstDevice, CUdeviceptr_v2 srcDevice, size_t ByteCount)
{
    return vgpu_copy_on_device(dstDevice, srcDevice, ByteCount, NULL, 0);
}

CUresult vgpu_served_cuMemcpyDtoDAsync(CUdeviceptr_v2 dstDevice, CUdeviceptr_v2 srcDevice, size_t ByteCount,
                                       CUstream hStream)
{
    return vgpu_copy_on_device(dstDevice, srcDevice, ByteCount, hStream, 1);
}

CUresult vgpu_memset_elements(CUdeviceptr_v2 dst, uint32_t value, int element_size, size_t count, CUstream hStream,
                              int async)
{
    CUresult result;
    int stream = 0;
    if (async && vgpu_capturing(hStream)) {
        const struct vgpu_node node = {
            .kind = VGPU_NODE_MEMSET, .device = dst, .value = value, .element_size = element_size, .count = count};
        return vgpu_capture(hStream, &node, NULL);
    }
    struct vgpu_device *device = vgpu_current_stream(hStream, &stream, &result);
    if (device == NULL) {
        return result;
    }
    if (vgpu_direct_memset(device, dst, value, element_size, count, hStream, async, &result)) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_MEMSET);
    vgpu_put_u32(&request, (uint32_t)stream);
    vgpu_put_u64(&request, dst);
    vgpu_put_u32(&request, value);
    vgpu_put_u8(&request, (uint8_t)element_size);
    vgpu_put_u64(&request, count);
    return on_stream(device, &request, async);
}

CUresult vgpu_served_cuMemsetD8(CUdeviceptr_v2 dstDevice, unsigned char uc, size_t N)
{
    return vgpu_memset_elements(dstDevice, uc, 1, N, NULL, 0);
}

CUresult vgpu_served_cuMemsetD8Async(CUdeviceptr_v2 dstDevice, unsigned char uc, size_t N, CUstream hStream)
{
    return vgpu_memset_elements(dstDevice, uc, 1, N, hStream, 1);
}

CUresult vgpu_served_cuMemsetD16(CUdeviceptr_v2 dstDevice, unsigned short us, size_t N)
{
    return vgpu_memset_elements(dstDevice, us, 2, N, NULL, 0);
}

CUresult vgpu_served_cuMemsetD16Async(CUdeviceptr_v2 dstDevice, unsigned short us, size_t N, CUstream hStream)
{
    return vgpu_memset_elements(dstDevice, us, 2, N, hStream, 1);
}

CUresult vgpu_served_cuMemsetD32(CUdeviceptr_v2 dstDevice, unsigned int ui, size_t N)
{
    return vgpu_memset_elements(dstDevice, ui, 4, N, NULL, 0);
}

CUresult vgpu_served_cuMemsetD32Async(CUdeviceptr_v2 dstDevice, unsigned int ui, size_t N, CUstream hStream)
{
    return vgpu_memset_elements(dstDevice, ui, 4, N, hStream, 1);
}
