/*
 * Served on a vGPU: what a pointer is (cuPointerGetAttribute, cuPointerGetAttributes, behind the runtime's
 * cudaPointerGetAttributes), answered from what this library placed: the allocations in the vGPUs' windows, the module
 * variables whose address the program was given (cuModuleGetGlobal, behind cudaGetSymbolAddress; each its own range)
 * and the page-locked host memory it gave. Libraries ask it of the buffers they are handed, to tell device memory from
 * host memory and find its device: cuFFT of a plan's work area, CUDA-aware MPI of every message's buffer.
 *
 * Other memory (the program's own pageable memory) is no CUDA pointer: cuPointerGetAttribute refuses it as the driver
 * does (CUDA_ERROR_INVALID_VALUE) and cuPointerGetAttributes answers zeros. Page-locked memory vgpu gave belongs to no
 * one vGPU (a vGPU may move); it answers the current vGPU, else the first. The attributes of a kind a vGPU does not
 * have answer what such memory has: not managed, not shareable by IPC or a handle, not from a pool, read and written
 * by its device. Those that name the driver's own mappings (tokens for the nv-p2p kernel interface, GPUDirect RDMA,
 * hardware decompression) are refused naming the attribute.
 */
#include "serving.h"

#include <stdatomic.h>
#include <string.h>

/* What a pointer turned out to be. */
struct pointer {
    CUmemorytype type;         /* 0: no CUDA pointer */
    struct vgpu_device *device;
    uint64_t start;
    uint64_t bytes;
    uint64_t buffer_id;
};

static struct pointer look_up(CUdeviceptr address)
{
    struct pointer found = {0};
    for (int k = 0; k < vgpu_device_count(); k++) {
        struct vgpu_device *device = vgpu_device_at(k);
        struct vgpu_allocation allocation;
        if (address - device->window_base < device->window_size && vgpu_allocation_at(device, address, &allocation)) {
            return (struct pointer){CU_MEMORYTYPE_DEVICE, device, allocation.address, allocation.bytes,
                                    allocation.buffer_id};
        }
    }
    uintptr_t start;
    size_t bytes;
    uint64_t buffer_id;
    if (vgpu_host_block_at((const void *)(uintptr_t)address, &start, &bytes, &buffer_id)) {
        CUresult ignored;
        struct vgpu_device *device = vgpu_current_device(&ignored);
        found = (struct pointer){CU_MEMORYTYPE_HOST, device != NULL ? device : vgpu_device_at(0), start, bytes,
                                 buffer_id};
    }
    return found;
}

static atomic_int refusal_said;

/* How many bytes an attribute's answer takes (a CUcontext, pointer, address, size or 64-bit id 8, the others an int or
   unsigned int), 0 for an attribute this library answers nothing for. */
static size_t answer_bytes(CUpointer_attribute attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return 8;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        return 4;
    default:
        return 0;
    }
}

/* Writes value into data at attribute's width (answer_bytes): 8 bytes whole, 4 as an int or unsigned int, nothing for
   an attribute without an answer. */
static void store(void *data, CUpointer_attribute attribute, uint64_t value)
{
    size_t bytes = answer_bytes(attribute);
    if (bytes == 8) {
        memcpy(data, &value, sizeof value);
    } else if (bytes == 4) {
        uint32_t narrow = (uint32_t)value;
        memcpy(data, &narrow, sizeof narrow);
    }
}

/* One attribute of pointer (at address), in *value: CUDA_ERROR_INVALID_VALUE where it has none, as the driver answers
   (*value is then the zero it leaves). */
static CUresult value_of(const struct pointer *pointer, CUdeviceptr address, CUpointer_attribute attribute,
                         uint64_t *value)
{
    int device_memory = pointer->type == CU_MEMORYTYPE_DEVICE;
    *value = 0;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        if (pointer->device == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        *value = (uintptr_t)vgpu_primary_context(pointer->device);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        *value = (uint64_t)pointer->type;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        *value = device_memory ? address : 0; /* kernels cannot reach page-locked memory on a vGPU */
        return device_memory ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        *value = device_memory ? 0 : address;
        return device_memory ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
        *value = 1; /* a vGPU's synchronous copies and memsets are done when their call returns */
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        *value = pointer->buffer_id;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return CUDA_SUCCESS; /* never managed nor shareable by legacy IPC, never from a pool */
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        return CUDA_SUCCESS; /* no handle exports it (cuMemExportToShareableHandle is not served) */
    case CU_POINTER_ATTRIBUTE_MAPPED:
        *value = 1;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
        if (pointer->device == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        *value = (uint64_t)pointer->device->ordinal;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        *value = pointer->start;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        *value = pointer->bytes;
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        *value = device_memory ? CU_POINTER_ATTRIBUTE_ACCESS_FLAG_READWRITE : CU_POINTER_ATTRIBUTE_ACCESS_FLAG_NONE;
        return CUDA_SUCCESS;
    default: {
        int named = (int)attribute >= CU_POINTER_ATTRIBUTE_P2P_TOKENS &&
                    (int)attribute <= CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE;
        if (named && !atomic_exchange(&refusal_said, 1)) {
            vgpu_say("cuPointerGetAttribute of attribute %d is refused on a vGPU: it names the driver's own mapping of"
                     " the memory (P2P tokens, GPUDirect RDMA, hardware decompression)", (int)attribute);
        }
        return named ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    }
    }
}

/* One attribute of pointer (at address) into data, as cuPointerGetAttribute answers it. */
static CUresult attribute_of(const struct pointer *pointer, CUdeviceptr address, CUpointer_attribute attribute,
                             void *data)
{
    uint64_t value;
    CUresult result = value_of(pointer, address, attribute, &value);
    store(data, attribute, value);
    return result;
}

CUresult vgpu_served_cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (data == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct pointer pointer = look_up(ptr);
    if (pointer.type == 0) {
        return CUDA_ERROR_INVALID_VALUE; /* the driver's answer for memory it does not know */
    }
    return attribute_of(&pointer, ptr, attribute, data);
}

CUresult vgpu_served_cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                            CUdeviceptr ptr)
{
    if (numAttributes == 0 || attributes == NULL || data == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct pointer pointer = look_up(ptr);
    for (unsigned int i = 0; i < numAttributes; i++) {
        if (data[i] == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        if (pointer.type == 0) { /* no CUDA pointer: each answer is zeros, and the call succeeds, as the driver's */
            if (answer_bytes(attributes[i]) == 0) {
                return CUDA_ERROR_INVALID_VALUE;
            }
            store(data[i], attributes[i], 0);
            continue;
        }
        CUresult result = attribute_of(&pointer, ptr, attributes[i], data[i]);
        /* an attribute the memory has no value for (a device pointer of host memory) answers a zero, not an error */
        if (result == CUDA_ERROR_INVALID_VALUE && answer_bytes(attributes[i]) == 0) {
            return result;
        }
        if (result == CUDA_ERROR_NOT_SUPPORTED) {
            return result;
        }
    }
    return CUDA_SUCCESS;
}
