/*
 * Served on a vGPU: pitched allocations, 2-D and 3-D copies of linear memory, 2-D memsets (cudaMallocPitch,
 * cudaMalloc3D, cudaMemcpy2D, cudaMemcpy3D, cudaMemset2D, cudaMemset3D and their Async forms), and copies whose
 * direction comes from the pointers (cuMemcpy, cuMemcpyAsync: cudaMemcpyDefault).
 *
 * A 2-D copy or memset is its rows. Rows to the device go as one scattered copy and rows from it as one gathered copy,
 * each one request however many rows; rows on the device, and memsets' rows, go as a request each, sent without
 * waiting but the last of a synchronous call, which waits and so reports any row's failure, as the driver reports it
 * at the call; a 2-D memset of whole 32-bit words (pitched memory's) is one request. Rows back to back (pitch equal to
 * the width, or one row) are one plain copy or memset, with everything that path does (direct calls, page-locked
 * memory shared with the launcher). A copy between two vGPUs (cuMemcpy,
 * cuMemcpyPeer) goes through the host, since they may be on different nodes. Rows of page-locked memory shared with
 * the launcher are a named copy each, asynchronous in the asynchronous form. A 3-D copy is the 2-D copies of its
 * slices, or one of all its rows where they are evenly spaced. The program's own memory is done with when the call
 * returns, in either form, as for the 1-D copies. CUDA arrays are not served.
 *
 * Device memory is any address in a vGPU's window; the call runs on that vGPU, whichever is current. Other addresses
 * are the program's memory. An address's allocation (cuMemGetAddressRange) and stream-ordered allocation
 * (cudaMallocAsync, cudaFreeAsync: an allocation at the call, a free after the stream's work) are answered here too.
 */
#include "serving.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* A pitched allocation's rows are whole units of this many bytes: a multiple of every GPU's texture pitch alignment,
   so each row starts where a kernel's widest loads may. */
#define PITCH_UNIT 512u

/* One side of a copy: host memory of the program, or device memory of a vGPU. */
struct side {
    struct vgpu_device *device; /* NULL: host memory */
    uint64_t address;           /* device memory */
    uint8_t *host;              /* host memory */
    size_t pitch;
};

/* The vGPU whose window holds address, or NULL: the program's own memory. */
static struct vgpu_device *window_holding(uint64_t address)
{
    for (int k = 0; k < vgpu_device_count(); k++) {
        struct vgpu_device *device = vgpu_device_at(k);
        if (address - device->window_base < device->window_size) {
            return device;
        }
    }
    return NULL;
}

static struct side unified(uint64_t address, size_t pitch)
{
    struct vgpu_device *device = window_holding(address);
    return device != NULL ? (struct side){device, address, NULL, pitch}
                          : (struct side){NULL, 0, (uint8_t *)(uintptr_t)address, pitch};
}

static atomic_int array_refusal_said;

/* One side of a CUDA_MEMCPY2D, from its row y and byte x on. */
static CUresult side_of(CUmemorytype type, const void *host, CUdeviceptr_v2 device, size_t x, size_t y, size_t pitch,
                        struct side *side)
{
    size_t from = y * pitch + x;
    switch (type) {
    case CU_MEMORYTYPE_HOST:
        if (host == NULL) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        *side = (struct side){NULL, 0, (uint8_t *)(uintptr_t)host + from, pitch};
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        *side = (struct side){window_holding(device + from), device + from, NULL, pitch};
        return side->device != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE; /* no vGPU's memory */
    case CU_MEMORYTYPE_UNIFIED:
        if (device == 0) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        *side = unified(device + from, pitch);
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_ARRAY:
        if (!atomic_exchange(&array_refusal_said, 1)) {
            vgpu_say("a 2-D copy to or from a CUDA array is refused on a vGPU: CUDA arrays are not served");
        }
        return CUDA_ERROR_NOT_SUPPORTED;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

/* Makes device's context the thread's current one for a call on memory of device's, returning the one it replaces;
   the call's stream must be device's. */
static struct vgpu_handle *enter(struct vgpu_device *device)
{
    struct vgpu_handle *was = vgpu_get_current();
    if (was == NULL || was->device != device) {
        vgpu_set_current(vgpu_primary_context(device));
    }
    return was;
}

static void leave(struct vgpu_handle *was)
{
    vgpu_set_current(was);
}

/* side moved on by bytes (to a 3-D copy's next slice, a piece of a copy through the host). */
static struct side advanced(struct side side, size_t bytes)
{
    if (side.device != NULL) {
        side.address += bytes;
    } else {
        side.host += bytes;
    }
    return side;
}

/* Rows between two host sides, after the stream's work before them. */
static CUresult rows_on_host(const struct side *dst, const struct side *src, size_t width, size_t height,
                             CUstream stream)
{
    CUresult result = vgpu_served_cuStreamSynchronize(stream);
    for (size_t row = 0; result == CUDA_SUCCESS && row < height; row++) {
        memmove(dst->host + row * dst->pitch, src->host + row * src->pitch, width);
    }
    return result;
}

/* Rows on one vGPU, a copy each (the last waits in the synchronous form). */
static CUresult rows_on_device(const struct side *dst, const struct side *src, size_t width, size_t height,
                               CUstream stream, int async)
{
    CUresult result = CUDA_SUCCESS;
    for (size_t row = 0; result == CUDA_SUCCESS && row < height; row++) {
        int last = row + 1 == height;
        result = vgpu_copy_on_device(dst->address + row * dst->pitch, src->address + row * src->pitch, width, stream,
                                     async || !last);
    }
    return result;
}

/* Rows between page-locked memory shared with the launcher (its region, from offset) and a vGPU: a copy each, named,
   sent without waiting but the last of a synchronous call, so no byte crosses the session and the asynchronous form
   stays on its stream, as CUDA leaves a copy with page-locked memory. */
static CUresult rows_with_region(struct vgpu_device *device, int stream_id, const struct side *dst,
                                 const struct side *src, size_t width, size_t height, uint32_t region, uint64_t offset,
                                 int async)
{
    int to_device = dst->device != NULL;
    const struct side *on_device = to_device ? dst : src;
    size_t host_pitch = to_device ? src->pitch : dst->pitch;
    int opcode = to_device ? VGPU_OP_MEMCPY_HTOD_FROM_REGION : VGPU_OP_MEMCPY_DTOH_TO_REGION;
    CUresult result = CUDA_SUCCESS;
    for (size_t row = 0; result == CUDA_SUCCESS && row < height; row++) {
        result = vgpu_copy_with_region(device, opcode, stream_id, on_device->address + row * on_device->pitch, region,
                                       offset + row * host_pitch, width, async || row + 1 < height);
    }
    return result;
}

/* Rows between the program's memory and a vGPU: named where the memory is shared with the launcher, else one scattered
   or gathered copy on the current vGPU. */
static CUresult rows_across(const struct side *dst, const struct side *src, size_t width, size_t height,
                            CUstream stream, int async)
{
    CUresult result;
    int stream_id = 0;
    struct vgpu_device *device = vgpu_current_stream(stream, &stream_id, &result);
    if (device == NULL) {
        return result;
    }
    const struct side *host = dst->device != NULL ? src : dst;
    uint32_t region = 0;
    uint64_t offset = 0;
    if (vgpu_host_region_at(host->host, (height - 1) * host->pitch + width, &region, &offset)) {
        return rows_with_region(device, stream_id, dst, src, width, height, region, offset, async);
    }
    pthread_mutex_lock(&device->lock);
    if (dst->device != NULL) {
        struct vgpu_rows rows = {dst->address, dst->pitch, width, height};
        result = vgpu_send_rows_to_device(device, &rows, src->host, src->pitch);
    } else {
        struct vgpu_rows rows = {src->address, src->pitch, width, height};
        result = vgpu_fetch_rows_from_device(device, &rows, dst->host, dst->pitch);
    }
    pthread_mutex_unlock(&device->lock);
    return result;
}

/* A copy through the host is staged in pieces of at most this many bytes. */
#define STAGING_BYTES (64u << 20)

static CUresult copy_rows(struct side dst, struct side src, size_t width, size_t height, CUstream stream, int async);

static size_t smaller(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* Rows from one vGPU to another, which may be on another node and so cannot reach it: through the host, a piece at a
   time (rows, or a part of a long row), each read from the source's vGPU and written to the destination's, done when
   the call returns, as the driver stages a copy between GPUs without peer access. */
static CUresult copy_through_host(struct side dst, struct side src, size_t width, size_t height)
{
    size_t piece_width = smaller(width, STAGING_BYTES);
    size_t piece_rows = smaller(STAGING_BYTES / piece_width, height);
    uint8_t *staging = malloc(piece_width * piece_rows);
    if (staging == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult result = CUDA_SUCCESS;
    for (size_t row = 0; result == CUDA_SUCCESS && row < height; row += piece_rows) {
        size_t rows = smaller(height - row, piece_rows);
        for (size_t column = 0; result == CUDA_SUCCESS && column < width; column += piece_width) {
            size_t columns = smaller(width - column, piece_width);
            struct side host = {NULL, 0, staging, columns};
            result = copy_rows(host, advanced(src, row * src.pitch + column), columns, rows, NULL, 0);
            if (result == CUDA_SUCCESS) {
                result = copy_rows(advanced(dst, row * dst.pitch + column), host, columns, rows, NULL, 0);
            }
        }
    }
    free(staging);
    return result;
}

/* A copy of height rows of width bytes between two sides. */
static CUresult copy_rows(struct side dst, struct side src, size_t width, size_t height, CUstream stream, int async)
{
    if (width == 0 || height == 0) {
        return CUDA_SUCCESS;
    }
    if (height == 1) {
        dst.pitch = src.pitch = width; /* one row's pitch is not used */
    }
    if (dst.pitch < width || src.pitch < width) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (dst.device == NULL && src.device == NULL) {
        return rows_on_host(&dst, &src, width, height, stream);
    }
    if (dst.device != NULL && src.device != NULL && dst.device != src.device) {
        /* done at the call, so never recorded: a capture of the stream must not end without it */
        return async && vgpu_capturing(stream) ? vgpu_capture_refused(stream)
                                               : copy_through_host(dst, src, width, height);
    }
    int back_to_back = dst.pitch == width && src.pitch == width;
    struct vgpu_handle *was = enter(dst.device != NULL ? dst.device : src.device);
    CUresult result;
    if (dst.device != NULL && src.device != NULL) {
        result = back_to_back ? vgpu_copy_on_device(dst.address, src.address, width * height, stream, async)
                              : rows_on_device(&dst, &src, width, height, stream, async);
    } else if (back_to_back) {
        result = dst.device != NULL ? vgpu_copy_to_device(dst.address, src.host, width * height, stream, async)
                                    : vgpu_copy_from_device(dst.host, src.address, width * height, stream, async);
    } else {
        result = rows_across(&dst, &src, width, height, stream, async);
    }
    leave(was);
    return result;
}

static CUresult copy_2d(const CUDA_MEMCPY2D_v2 *copy, CUstream stream, int async)
{
    if (copy == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct side dst;
    struct side src;
    CUresult result = side_of(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstXInBytes, copy->dstY,
                              copy->dstPitch, &dst);
    if (result == CUDA_SUCCESS) {
        result = side_of(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcXInBytes, copy->srcY,
                         copy->srcPitch, &src);
    }
    return result == CUDA_SUCCESS ? copy_rows(dst, src, copy->WidthInBytes, copy->Height, stream, async) : result;
}

CUresult vgpu_served_cuMemcpy2D(const CUDA_MEMCPY2D_v2 *pCopy)
{
    return copy_2d(pCopy, NULL, 0);
}

CUresult vgpu_served_cuMemcpy2DUnaligned(const CUDA_MEMCPY2D_v2 *pCopy)
{
    return copy_2d(pCopy, NULL, 0);
}

CUresult vgpu_served_cuMemcpy2DAsync(const CUDA_MEMCPY2D_v2 *pCopy, CUstream hStream)
{
    if (pCopy != NULL && vgpu_capturing(hStream)) {
        const struct vgpu_node node = {.kind = VGPU_NODE_COPY_2D, .copy_2d = *pCopy};
        return vgpu_capture(hStream, &node, NULL);
    }
    return copy_2d(pCopy, hStream, 1);
}

/* A 3-D copy of linear memory: Depth slices of Height rows, a side's rows its pitch apart and its slices its height of
   rows apart. Slices whose rows are evenly spaced on both sides (each side's height is the copy's) are one 2-D copy of
   all their rows; others are a 2-D copy each. */
static CUresult copy_3d(const CUDA_MEMCPY3D_v2 *copy, CUstream stream, int async)
{
    if (copy == NULL || copy->srcLOD != 0 || copy->dstLOD != 0 || copy->reserved0 != NULL ||
        copy->reserved1 != NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (copy->WidthInBytes == 0 || copy->Height == 0 || copy->Depth == 0) {
        return CUDA_SUCCESS;
    }
    size_t dst_height = copy->Depth == 1 ? copy->Height : copy->dstHeight;
    size_t src_height = copy->Depth == 1 ? copy->Height : copy->srcHeight;
    if (dst_height < copy->Height || src_height < copy->Height) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct side dst;
    struct side src;
    CUresult result = side_of(copy->dstMemoryType, copy->dstHost, copy->dstDevice, copy->dstXInBytes,
                              copy->dstZ * dst_height + copy->dstY, copy->dstPitch, &dst);
    if (result == CUDA_SUCCESS) {
        result = side_of(copy->srcMemoryType, copy->srcHost, copy->srcDevice, copy->srcXInBytes,
                         copy->srcZ * src_height + copy->srcY, copy->srcPitch, &src);
    }
    if (result != CUDA_SUCCESS) {
        return result;
    }
    if (dst_height == copy->Height && src_height == copy->Height) {
        return copy_rows(dst, src, copy->WidthInBytes, copy->Height * copy->Depth, stream, async);
    }
    for (size_t slice = 0; result == CUDA_SUCCESS && slice < copy->Depth; slice++) {
        result = copy_rows(advanced(dst, slice * dst_height * dst.pitch), advanced(src, slice * src_height * src.pitch),
                           copy->WidthInBytes, copy->Height, stream, async || slice + 1 < copy->Depth);
    }
    return result;
}

CUresult vgpu_served_cuMemcpy3D(const CUDA_MEMCPY3D_v2 *pCopy)
{
    return copy_3d(pCopy, NULL, 0);
}

CUresult vgpu_served_cuMemcpy3DAsync(const CUDA_MEMCPY3D_v2 *pCopy, CUstream hStream)
{
    if (pCopy != NULL && vgpu_capturing(hStream)) {
        const struct vgpu_node node = {.kind = VGPU_NODE_COPY_3D, .copy_3d = *pCopy};
        return vgpu_capture(hStream, &node, NULL);
    }
    return copy_3d(pCopy, hStream, 1);
}

/* A copy whose direction comes from its pointers; a null one is refused, as the driver refuses it. */
static CUresult copy_either_way(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t bytes, CUstream stream, int async)
{
    if (bytes > 0 && (dst == 0 || src == 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return copy_rows(unified(dst, bytes), unified(src, bytes), bytes, 1, stream, async);
}

CUresult vgpu_served_cuMemcpy(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t ByteCount)
{
    return copy_either_way(dst, src, ByteCount, NULL, 0);
}

CUresult vgpu_served_cuMemcpyAsync(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t ByteCount, CUstream hStream)
{
    return copy_either_way(dst, src, ByteCount, hStream, 1);
}

/* A copy between two contexts' memory: each address must be its context's vGPU's. */
static CUresult copy_between_contexts(CUdeviceptr_v2 dst, CUcontext dstContext, CUdeviceptr_v2 src,
                                      CUcontext srcContext, size_t bytes)
{
    struct vgpu_handle *to = vgpu_handle(dstContext, VGPU_CONTEXT);
    struct vgpu_handle *from = vgpu_handle(srcContext, VGPU_CONTEXT);
    if (to == NULL || from == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    if (bytes > 0 && (window_holding(dst) != to->device || window_holding(src) != from->device)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return copy_rows(unified(dst, bytes), unified(src, bytes), bytes, 1, NULL, 0);
}

CUresult vgpu_served_cuMemcpyPeer(CUdeviceptr_v2 dstDevice, CUcontext dstContext, CUdeviceptr_v2 srcDevice,
                                  CUcontext srcContext, size_t ByteCount)
{
    return copy_between_contexts(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

/* Done when the call returns, through the host, as a copy between vGPUs is (so never recorded by a capture). */
CUresult vgpu_served_cuMemcpyPeerAsync(CUdeviceptr_v2 dstDevice, CUcontext dstContext, CUdeviceptr_v2 srcDevice,
                                       CUcontext srcContext, size_t ByteCount, CUstream hStream)
{
    if (vgpu_capturing(hStream)) {
        return vgpu_capture_refused(hStream);
    }
    return copy_between_contexts(dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult vgpu_served_cuMemGetAddressRange(CUdeviceptr_v2 *pbase, size_t *psize, CUdeviceptr_v2 dptr)
{
    struct vgpu_device *device = window_holding(dptr);
    struct vgpu_allocation found;
    if (device == NULL || !vgpu_allocation_at(device, dptr, &found)) {
        return CUDA_ERROR_NOT_FOUND; /* as the driver, for an address in no allocation */
    }
    if (pbase != NULL) {
        *pbase = found.address;
    }
    if (psize != NULL) {
        *psize = found.bytes;
    }
    return CUDA_SUCCESS;
}

/* Stream-ordered allocation (cudaMallocAsync) is an allocation made at the call: the memory is the stream's from then
   on, as CUDA's is once the stream reaches the call. */
CUresult vgpu_served_cuMemAllocAsync(CUdeviceptr_v2 *dptr, size_t bytesize, CUstream hStream)
{
    CUresult result;
    int stream_id = 0;
    if (vgpu_current_stream(hStream, &stream_id, &result) == NULL) {
        return result;
    }
    return vgpu_served_cuMemAlloc(dptr, bytesize);
}

/* A stream-ordered free waits for the stream's work before it (which may still use the memory), then frees. */
CUresult vgpu_served_cuMemFreeAsync(CUdeviceptr_v2 dptr, CUstream hStream)
{
    CUresult result = vgpu_served_cuStreamSynchronize(hStream);
    return result == CUDA_SUCCESS ? vgpu_served_cuMemFree(dptr) : result;
}

CUresult vgpu_served_cuMemAllocPitch(CUdeviceptr_v2 *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                     unsigned int ElementSizeBytes)
{
    if (dptr == NULL || pPitch == NULL || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (WidthInBytes > SIZE_MAX - PITCH_UNIT) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    size_t pitch = (WidthInBytes + PITCH_UNIT - 1) / PITCH_UNIT * PITCH_UNIT;
    if (Height > SIZE_MAX / pitch) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult result = vgpu_served_cuMemAlloc(dptr, pitch * Height);
    if (result == CUDA_SUCCESS) {
        *pPitch = pitch;
    }
    return result;
}

/* Rows of 32-bit words, as the protocol's 2-D memset takes them whole: one request (synchronizing in the synchronous
   form, on the stream without waiting in the asynchronous one). */
static CUresult memset_rows_of_words(CUdeviceptr_v2 dst, size_t pitch, uint32_t word, size_t words, size_t height,
                                     CUstream stream, int async)
{
    CUresult result;
    int stream_id = 0;
    struct vgpu_device *device = vgpu_current_stream(stream, &stream_id, &result);
    if (device == NULL) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, async ? VGPU_OP_MEMSET_D2_D32_ASYNC : VGPU_OP_MEMSET_D2_D32);
    vgpu_put_u64(&request, dst);
    vgpu_put_u64(&request, pitch);
    vgpu_put_u32(&request, word);
    vgpu_put_u64(&request, words);
    vgpu_put_u64(&request, height);
    if (async) {
        vgpu_put_u32(&request, (uint32_t)stream_id);
        return vgpu_locked_send_async(device, &request);
    }
    return vgpu_locked_call(device, &request, NULL);
}

/* value's element repeated through a 32-bit word. */
static uint32_t word_of(uint32_t value, int element_size)
{
    return element_size == 1 ? (value & 0xffu) * 0x01010101u
           : element_size == 2 ? (value & 0xffffu) * 0x00010001u
                               : value;
}

/* A memset of height rows of width elements, pitch bytes apart: one memset when they are back to back; one 2-D memset
   of 32-bit words when the rows, their start and their pitch are whole words (as pitched memory's are); else one per
   row (the last waits in the synchronous form). */
CUresult vgpu_memset_rows(CUdeviceptr_v2 dst, size_t pitch, uint32_t value, int element_size, size_t width,
                          size_t height, CUstream stream, int async)
{
    if (width == 0 || height == 0) {
        return CUDA_SUCCESS;
    }
    if (async && vgpu_capturing(stream)) {
        const struct vgpu_node node = {.kind = VGPU_NODE_MEMSET_2D, .device = dst, .pitch = pitch, .value = value,
                                       .element_size = element_size, .count = width, .height = height};
        return vgpu_capture(stream, &node, NULL);
    }
    struct vgpu_device *device = window_holding(dst);
    if (device == NULL || (height > 1 && pitch < width * (size_t)element_size)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_handle *was = enter(device);
    CUresult result;
    size_t row_bytes = width * (size_t)element_size;
    if (height == 1 || pitch == row_bytes) {
        result = vgpu_memset_elements(dst, value, element_size, width * height, stream, async);
    } else if (dst % 4 == 0 && pitch % 4 == 0 && row_bytes % 4 == 0) {
        result = memset_rows_of_words(dst, pitch, word_of(value, element_size), row_bytes / 4, height, stream, async);
    } else {
        result = CUDA_SUCCESS;
        for (size_t row = 0; result == CUDA_SUCCESS && row < height; row++) {
            result = vgpu_memset_elements(dst + row * pitch, value, element_size, width, stream,
                                          async || row + 1 < height);
        }
    }
    leave(was);
    return result;
}

CUresult vgpu_served_cuMemsetD2D8(CUdeviceptr_v2 dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                  size_t Height)
{
    return vgpu_memset_rows(dstDevice, dstPitch, uc, 1, Width, Height, NULL, 0);
}

CUresult vgpu_served_cuMemsetD2D8Async(CUdeviceptr_v2 dstDevice, size_t dstPitch, unsigned char uc, size_t Width,
                                       size_t Height, CUstream hStream)
{
    return vgpu_memset_rows(dstDevice, dstPitch, uc, 1, Width, Height, hStream, 1);
}

CUresult vgpu_served_cuMemsetD2D16(CUdeviceptr_v2 dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                   size_t Height)
{
    return vgpu_memset_rows(dstDevice, dstPitch, us, 2, Width, Height, NULL, 0);
}

CUresult vgpu_served_cuMemsetD2D16Async(CUdeviceptr_v2 dstDevice, size_t dstPitch, unsigned short us, size_t Width,
                                        size_t Height, CUstream hStream)
{
    return vgpu_memset_rows(dstDevice, dstPitch, us, 2, Width, Height, hStream, 1);
}

CUresult vgpu_served_cuMemsetD2D32(CUdeviceptr_v2 dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                   size_t Height)
{
    return vgpu_memset_rows(dstDevice, dstPitch, ui, 4, Width, Height, NULL, 0);
}

CUresult vgpu_served_cuMemsetD2D32Async(CUdeviceptr_v2 dstDevice, size_t dstPitch, unsigned int ui, size_t Width,
                                        size_t Height, CUstream hStream)
{
    return vgpu_memset_rows(dstDevice, dstPitch, ui, 4, Width, Height, hStream, 1);
}
