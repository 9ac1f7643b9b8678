/* Served on a vGPU: streams, events and their synchronization, by the ids the worker knows them by. */
#include "serving.h"

#include <string.h>

static CUresult create(enum vgpu_handle_kind kind, int opcode, void **handle)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (handle == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (device == NULL) {
        return result;
    }
    int id = vgpu_next_remote_id(device);
    struct vgpu_handle *created = vgpu_new_handle(kind, device, id);
    if (created == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, opcode);
    vgpu_put_u32(&request, (uint32_t)id);
    result = vgpu_locked_call(device, &request, NULL);
    if (result != CUDA_SUCCESS) {
        vgpu_free_handle(created);
        return result;
    }
    *handle = created;
    return CUDA_SUCCESS;
}

static CUresult by_id(struct vgpu_handle *handle, int opcode, int destroy)
{
    if (handle == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, opcode);
    vgpu_put_u32(&request, (uint32_t)handle->remote_id);
    CUresult result = vgpu_locked_call(handle->device, &request, NULL);
    if (result == CUDA_SUCCESS && destroy) {
        vgpu_free_handle(handle);
    }
    return result;
}

CUresult vgpu_served_cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    (void)Flags; /* non-blocking or not: a vGPU's streams never wait for the legacy default stream's host thread */
    return create(VGPU_STREAM, VGPU_OP_STREAM_CREATE, (void **)phStream);
}

/* Stream priorities: the vGPU's worker schedules its streams' work without them, so a vGPU answers the range a GPU
   without priorities answers (0 to 0), and a priority asked for is clamped into it, as the driver clamps one. */
CUresult vgpu_served_cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
    (void)priority;
    return vgpu_served_cuStreamCreate(phStream, flags);
}

CUresult vgpu_served_cuStreamGetPriority(CUstream hStream, int *priority)
{
    int id = 0;
    CUresult result = CUDA_SUCCESS;
    if (priority == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_device *device = vgpu_current_device(&result);
    if (device == NULL || (result = vgpu_stream_id_even_captured(hStream, device, &id)) != CUDA_SUCCESS) {
        return result;
    }
    *priority = 0;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (vgpu_get_current() == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT; /* as the driver answers without a current context */
    }
    if (leastPriority != NULL) {
        *leastPriority = 0;
    }
    if (greatestPriority != NULL) {
        *greatestPriority = 0;
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuStreamDestroy(CUstream hStream)
{
    struct vgpu_handle *stream = vgpu_handle(hStream, VGPU_STREAM);
    if (stream != NULL) {
        vgpu_capture_forget(stream);
    }
    return by_id(stream, VGPU_OP_STREAM_DESTROY, 1);
}

/* A request about a stream of the current vGPU, begun with the stream's id: the vGPU, or NULL with *result set. */
static struct vgpu_device *stream_request(CUstream hStream, int opcode, struct vgpu_request *request, CUresult *result)
{
    int id = 0;
    struct vgpu_device *device = vgpu_current_stream(hStream, &id, result);
    if (device != NULL) {
        vgpu_request_begin(request, opcode);
        vgpu_put_u32(request, (uint32_t)id);
    }
    return device;
}

CUresult vgpu_served_cuStreamSynchronize(CUstream hStream)
{
    CUresult result;
    int id = 0;
    struct vgpu_device *device = vgpu_current_stream(hStream, &id, &result);
    if (device == NULL || vgpu_direct_synchronize(device, hStream, 0, &result)) {
        return result;
    }
    int mark = vgpu_direct_sync_mark(device);
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_STREAM_SYNCHRONIZE);
    vgpu_put_u32(&request, (uint32_t)id);
    result = vgpu_locked_call(device, &request, NULL);
    vgpu_direct_synchronized(device, mark);
    return result;
}

/* A host function on a stream (cuLaunchHostFunc, cuStreamAddCallback) runs as its call returns, on the calling thread,
   after the stream's work before it, so what the program issues after the call comes after it, as on a GPU. A failure
   the synchronization reports (a kernel's fault) is the call's, and a host function does not run after it; a callback
   is told it. */
CUresult vgpu_served_cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData)
{
    if (fn == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (vgpu_capturing(hStream)) {
        const struct vgpu_node node = {.kind = VGPU_NODE_HOST_FUNCTION, .host_function = fn, .user_data = userData};
        return vgpu_capture(hStream, &node, NULL);
    }
    CUresult result = vgpu_served_cuStreamSynchronize(hStream);
    if (result == CUDA_SUCCESS) {
        fn(userData);
    }
    return result;
}

CUresult vgpu_served_cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData,
                                         unsigned int Flags)
{
    if (callback == NULL || Flags != 0) {
        return CUDA_ERROR_INVALID_VALUE; /* the flags are reserved: 0 */
    }
    if (vgpu_capturing(hStream)) {
        /* CUDA captures no callback (cuLaunchHostFunc is the call graphs record): refused, and not called */
        return vgpu_capture_refused(hStream);
    }
    CUresult result = vgpu_served_cuStreamSynchronize(hStream);
    callback(hStream, result, userData);
    return result;
}

CUresult vgpu_served_cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    (void)Flags; /* timing or not, blocking sync or not: the backend's events time always */
    return create(VGPU_EVENT, VGPU_OP_EVENT_CREATE, (void **)phEvent);
}

CUresult vgpu_served_cuEventDestroy(CUevent hEvent)
{
    struct vgpu_handle *event = vgpu_handle(hEvent, VGPU_EVENT);
    if (event != NULL) {
        vgpu_capture_forget_event(event);
    }
    return by_id(event, VGPU_OP_EVENT_DESTROY, 1);
}

CUresult vgpu_served_cuEventSynchronize(CUevent hEvent)
{
    return by_id(vgpu_handle(hEvent, VGPU_EVENT), VGPU_OP_EVENT_SYNCHRONIZE, 0);
}

CUresult vgpu_served_cuEventRecord(CUevent hEvent, CUstream hStream)
{
    struct vgpu_handle *event = vgpu_handle(hEvent, VGPU_EVENT);
    if (event == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    int stream = 0;
    CUresult result = CUDA_SUCCESS;
    if (vgpu_capture_event_record(event, hStream, &result)) {
        return result;
    }
    result = vgpu_stream_id(hStream, event->device, &stream);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_EVENT_RECORD);
    vgpu_put_u32(&request, (uint32_t)event->remote_id);
    vgpu_put_u32(&request, (uint32_t)stream);
    return vgpu_locked_call(event->device, &request, NULL);
}

/* CU_EVENT_RECORD_EXTERNAL means something only inside a capture (an event node, for a wait outside the graph), which
   a vGPU's captures do not record: refused there as every unrecorded call is; outside, CUDA refuses the flag too. */
CUresult vgpu_served_cuEventRecordWithFlags(CUevent hEvent, CUstream hStream, unsigned int flags)
{
    if (flags == CU_EVENT_RECORD_EXTERNAL) {
        return vgpu_capturing(hStream) ? vgpu_capture_refused(hStream) : CUDA_ERROR_INVALID_VALUE;
    }
    if (flags != CU_EVENT_RECORD_DEFAULT) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return vgpu_served_cuEventRecord(hEvent, hStream);
}

CUresult vgpu_served_cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    struct vgpu_handle *start = vgpu_handle(hStart, VGPU_EVENT);
    struct vgpu_handle *end = vgpu_handle(hEnd, VGPU_EVENT);
    if (pMilliseconds == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (start == NULL || end == NULL || start->device != end->device) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_EVENT_ELAPSED_TIME);
    vgpu_put_u32(&request, (uint32_t)start->remote_id);
    vgpu_put_u32(&request, (uint32_t)end->remote_id);
    struct vgpu_reply reply;
    CUresult result = vgpu_locked_call(start->device, &request, &reply);
    if (result == CUDA_SUCCESS) {
        uint32_t bits = vgpu_get_u32(&reply);
        memcpy(pMilliseconds, &bits, sizeof bits);
        result = vgpu_reply_ok(&reply);
        vgpu_reply_free(&reply);
    }
    return result;
}

CUresult vgpu_served_cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    struct vgpu_handle *event = vgpu_handle(hEvent, VGPU_EVENT);
    if (event == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (Flags != CU_EVENT_WAIT_DEFAULT) {
        return CUDA_ERROR_INVALID_VALUE; /* CU_EVENT_WAIT_EXTERNAL belongs to graphs' event nodes, not served */
    }
    int stream = 0;
    CUresult result = CUDA_SUCCESS;
    if (vgpu_capture_event_wait(hStream, event, &result)) {
        return result;
    }
    result = vgpu_stream_id(hStream, event->device, &stream);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_STREAM_WAIT_EVENT);
    vgpu_put_u32(&request, (uint32_t)stream);
    vgpu_put_u32(&request, (uint32_t)event->remote_id);
    return vgpu_locked_call(event->device, &request, NULL);
}

/* A query's answer: CUDA_SUCCESS when the work is done, CUDA_ERROR_NOT_READY while it is not. */
static CUresult query(struct vgpu_device *device, struct vgpu_request *request)
{
    struct vgpu_reply reply;
    CUresult result = vgpu_locked_call(device, request, &reply);
    if (result == CUDA_SUCCESS) {
        int done = vgpu_get_u8(&reply) != 0;
        result = vgpu_reply_ok(&reply);
        vgpu_reply_free(&reply);
        if (result == CUDA_SUCCESS && !done) {
            result = CUDA_ERROR_NOT_READY;
        }
    }
    return result;
}

CUresult vgpu_served_cuStreamQuery(CUstream hStream)
{
    CUresult result;
    struct vgpu_request request;
    struct vgpu_device *device = stream_request(hStream, VGPU_OP_STREAM_QUERY, &request, &result);
    return device == NULL ? result : query(device, &request);
}

CUresult vgpu_served_cuEventQuery(CUevent hEvent)
{
    struct vgpu_handle *event = vgpu_handle(hEvent, VGPU_EVENT);
    if (event == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_EVENT_QUERY);
    vgpu_put_u32(&request, (uint32_t)event->remote_id);
    return query(event->device, &request);
}
