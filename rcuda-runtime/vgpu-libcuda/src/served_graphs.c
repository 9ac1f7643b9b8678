/* Served on a vGPU: CUDA graphs made by stream capture (cudaStreamBeginCapture ... cudaStreamEndCapture,
 * cudaGraphInstantiate, cudaGraphLaunch), as codes that repeat a step and PyTorch's CUDA graphs make them.
 *
 * The rule: a graph is the work its capture recorded, in the order the program issued it, and launching it issues that
 * work on the launch's stream through the same calls the program would have made. So a graph's work reaches the worker
 * as ordinary requests: it moves with the vGPU and is replayed as any other work, and nothing of a graph lives on the
 * worker. What is recorded: kernel launches (their parameters' values copied at the call, as CUDA copies them),
 * memsets (2-D ones too), copies of linear memory, 1-, 2- and 3-D (host memory is read and written when the graph
 * runs, as a memcpy node does), and host functions.
 *
 * A capture forks and joins as CUDA's does: an event recorded on a captured stream is a point of the capture, and a
 * stream that waits for it captures into the same graph from then on, until the capture ends on the stream it began
 * on. Its nodes are still one sequence, in the order the program issued them, which is an order the fork's
 * dependencies allow: a launch of the graph runs them one after another on one stream.
 *
 * Any other call that puts work on a captured stream (a synchronization, a copy between two vGPUs, a wait for an event
 * of no capture) invalidates the capture, as CUDA invalidates one for a call it cannot capture: the capture ends with
 * CUDA_ERROR_STREAM_CAPTURE_INVALIDATED and no graph, never with a graph missing work. Graphs built node by node
 * (cuGraphAdd*Node) and updates of an instantiated graph are not served. */
#include "serving.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_MAGIC 0x76677266u /* "vgrf": a graph this library recorded */
#define EXEC_MAGIC 0x76677865u  /* "vgxe": an instantiated one */

struct vgpu_graph {
    uint32_t magic;
    struct vgpu_device *device;
    struct vgpu_node *nodes;
    size_t count;
    size_t capacity;
};

/* Handles of a capture: its member streams, or the events recorded in it. */
struct handle_list {
    struct vgpu_handle **handles;
    size_t count;
    size_t capacity;
};

struct vgpu_capture {
    struct vgpu_graph *graph;
    struct vgpu_handle *origin;   /* the stream it began on, the one that ends it */
    struct handle_list members;   /* the streams capturing into it: the origin and those that joined it */
    struct handle_list events;    /* the events recorded in it, each pointing here until it ends */
    CUstreamCaptureMode mode;
    pthread_t thread; /* the thread that began it: a global or thread-local capture ends on it */
    uint64_t id;
    int invalidated;
};

/* Guards every capture's recording: captures are begun, recorded into and ended by any of the program's threads. */
static pthread_mutex_t captures_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_capture_id;
static _Atomic int refusal_said;
static _Thread_local CUstreamCaptureMode thread_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

static int handle_list_add(struct handle_list *list, struct vgpu_handle *handle)
{
    struct vgpu_handle **room = vgpu_with_room_for_one(list->handles, list->count, &list->capacity, sizeof *room, 4);
    if (room == NULL) {
        return -1;
    }
    list->handles = room;
    list->handles[list->count++] = handle;
    return 0;
}

static void handle_list_remove(struct handle_list *list, const struct vgpu_handle *handle)
{
    for (size_t i = 0; i < list->count; i++) {
        if (list->handles[i] == handle) {
            list->handles[i] = list->handles[--list->count];
            return;
        }
    }
}

/* Every member stream and event of capture let go of it (under captures_lock); the capture is the caller's to free. */
static void capture_detach(struct vgpu_capture *capture)
{
    for (size_t i = 0; i < capture->members.count; i++) {
        atomic_store(&capture->members.handles[i]->capture, NULL);
    }
    for (size_t i = 0; i < capture->events.count; i++) {
        atomic_store(&capture->events.handles[i]->capture, NULL);
    }
    free(capture->members.handles);
    free(capture->events.handles);
    capture->members = (struct handle_list){0};
    capture->events = (struct handle_list){0};
}

static struct vgpu_graph *graph_of(const void *handle, uint32_t magic)
{
    const struct vgpu_graph *graph = handle;
    return graph != NULL && graph->magic == magic ? (struct vgpu_graph *)graph : NULL;
}

/* The bytes of a launch's parameter values: the sum of its function's parameter sizes. */
static size_t parameter_bytes(const struct vgpu_handle *function)
{
    size_t bytes = 0;
    for (int i = 0; i < function->parameter_count; i++) {
        bytes += (size_t)function->parameter_sizes[i];
    }
    return bytes;
}

/* node with its own copy of what it owns (a launch's parameter values from parameters, packed, behind the pointers
   to each that its launches pass, so that issuing it allocates nothing); 0, or -1 without memory. */
static int node_copy(struct vgpu_node *copy, const struct vgpu_node *node, void *const *parameters)
{
    *copy = *node;
    copy->parameters = NULL;
    copy->parameter_pointers = NULL;
    if (node->kind != VGPU_NODE_LAUNCH || node->function->parameter_count == 0) {
        return 0;
    }
    size_t count = (size_t)node->function->parameter_count;
    void **pointers = malloc(count * sizeof *pointers + parameter_bytes(node->function));
    if (pointers == NULL) {
        return -1;
    }
    copy->parameter_pointers = pointers;
    copy->parameters = (uint8_t *)(pointers + count);
    size_t at = 0;
    for (size_t i = 0; i < count; i++) {
        size_t size = (size_t)node->function->parameter_sizes[i];
        memcpy(copy->parameters + at, parameters != NULL ? parameters[i] : node->parameters + at, size);
        pointers[i] = copy->parameters + at;
        at += size;
    }
    return 0;
}

static int graph_append(struct vgpu_graph *graph, const struct vgpu_node *node, void *const *parameters)
{
    struct vgpu_node *room = vgpu_with_room_for_one(graph->nodes, graph->count, &graph->capacity, sizeof *room, 16);
    if (room == NULL) {
        return -1;
    }
    graph->nodes = room;
    if (node_copy(&graph->nodes[graph->count], node, parameters) != 0) {
        return -1;
    }
    graph->count++;
    return 0;
}

static struct vgpu_graph *graph_new(uint32_t magic, struct vgpu_device *device)
{
    struct vgpu_graph *graph = calloc(1, sizeof *graph);
    if (graph != NULL) {
        graph->magic = magic;
        graph->device = device;
    }
    return graph;
}

static void graph_free(struct vgpu_graph *graph)
{
    if (graph == NULL) {
        return;
    }
    for (size_t i = 0; i < graph->count; i++) {
        free(graph->nodes[i].parameter_pointers);
    }
    free(graph->nodes);
    graph->magic = 0;
    free(graph);
}

/* The capture of a stream handle of this library's; NULL for the default streams, other handles and no capture. */
static struct vgpu_capture *capture_of(CUstream stream, struct vgpu_handle **handle)
{
    if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
        return NULL;
    }
    struct vgpu_handle *found = vgpu_handle(stream, VGPU_STREAM);
    if (handle != NULL) {
        *handle = found;
    }
    return found == NULL ? NULL : atomic_load_explicit(&found->capture, memory_order_acquire);
}

int vgpu_capturing(CUstream stream)
{
    return capture_of(stream, NULL) != NULL;
}

CUresult vgpu_capture(CUstream stream, const struct vgpu_node *node, void **kernel_params)
{
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *capture = capture_of(stream, NULL);
    CUresult result = CUDA_SUCCESS;
    if (capture == NULL) {
        result = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED; /* ended by another thread meanwhile */
    } else if (capture->invalidated) {
        result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (graph_append(capture->graph, node, kernel_params) != 0) {
        result = CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_unlock(&captures_lock);
    return result;
}

CUresult vgpu_capture_refused(CUstream stream)
{
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *capture = capture_of(stream, NULL);
    int was_invalidated = capture == NULL || capture->invalidated;
    if (capture != NULL) {
        capture->invalidated = 1;
    }
    pthread_mutex_unlock(&captures_lock);
    if (was_invalidated) {
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    if (!atomic_exchange(&refusal_said, 1)) {
        vgpu_say("a call put work on a stream being captured that a vGPU does not record (it records kernel launches, "
                 "memsets, copies of linear memory, host functions and events): the capture is invalidated, as CUDA "
                 "invalidates one for a call it cannot capture");
    }
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

/* A member stream that is destroyed leaves the capture; the origin ends it, graph and all. */
void vgpu_capture_forget(struct vgpu_handle *stream)
{
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *capture = atomic_load(&stream->capture);
    if (capture != NULL && capture->origin != stream) {
        handle_list_remove(&capture->members, stream);
        atomic_store(&stream->capture, NULL);
        capture = NULL;
    } else if (capture != NULL) {
        capture_detach(capture);
    }
    pthread_mutex_unlock(&captures_lock);
    if (capture != NULL) {
        graph_free(capture->graph);
        free(capture);
    }
}

void vgpu_capture_forget_event(struct vgpu_handle *event)
{
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *capture = atomic_exchange(&event->capture, NULL);
    if (capture != NULL) {
        handle_list_remove(&capture->events, event);
    }
    pthread_mutex_unlock(&captures_lock);
}

int vgpu_capture_event_record(struct vgpu_handle *event, CUstream hStream, CUresult *result)
{
    struct vgpu_handle *stream = NULL;
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *capture = capture_of(hStream, &stream);
    struct vgpu_capture *before = atomic_load(&event->capture);
    if (before != NULL && before != capture) { /* recorded again elsewhere: a point of that capture no more */
        handle_list_remove(&before->events, event);
        atomic_store(&event->capture, NULL);
    }
    if (capture == NULL) {
        pthread_mutex_unlock(&captures_lock);
        return 0;
    }
    if (stream->device != event->device) {
        *result = CUDA_ERROR_INVALID_HANDLE;
    } else if (capture->invalidated) {
        *result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (before != capture && handle_list_add(&capture->events, event) != 0) {
        *result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        atomic_store(&event->capture, capture);
        *result = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&captures_lock);
    return 1;
}

int vgpu_capture_event_wait(CUstream hStream, struct vgpu_handle *event, CUresult *result)
{
    struct vgpu_handle *stream = NULL;
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *recorded_in = atomic_load(&event->capture);
    struct vgpu_capture *capture = recorded_in == NULL ? NULL : capture_of(hStream, &stream);
    if (recorded_in == NULL) {
        pthread_mutex_unlock(&captures_lock);
        return 0;
    }
    if (stream == NULL) {
        /* a default stream would wait for work that runs only when the graph is launched */
        *result = hStream == NULL || hStream == CU_STREAM_LEGACY || hStream == CU_STREAM_PER_THREAD
                      ? CUDA_ERROR_STREAM_CAPTURE_IMPLICIT
                      : CUDA_ERROR_INVALID_HANDLE;
    } else if (stream->device != event->device) {
        *result = CUDA_ERROR_INVALID_HANDLE;
    } else if (capture == recorded_in) {
        *result = CUDA_SUCCESS; /* within one capture, the order the program issues its work in is the graph's */
    } else if (capture != NULL) {
        *result = CUDA_ERROR_STREAM_CAPTURE_MERGE;
    } else if (recorded_in->invalidated) {
        *result = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    } else if (handle_list_add(&recorded_in->members, stream) != 0) {
        *result = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        atomic_store(&stream->capture, recorded_in); /* the stream joins the capture: a fork */
        *result = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&captures_lock);
    return 1;
}

CUresult vgpu_served_cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
    if (hStream == NULL || hStream == CU_STREAM_LEGACY) {
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; /* nor can the legacy default stream be captured on a GPU */
    }
    if (hStream == CU_STREAM_PER_THREAD) {
        vgpu_say("capturing the per-thread default stream is not served on a vGPU yet (a stream the program made is)");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    struct vgpu_handle *stream = vgpu_handle(hStream, VGPU_STREAM);
    if (stream == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL && mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
        mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_capture *capture = calloc(1, sizeof *capture);
    struct vgpu_graph *graph = graph_new(GRAPH_MAGIC, stream->device);
    if (capture == NULL || graph == NULL) {
        free(capture);
        graph_free(graph);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    capture->graph = graph;
    capture->origin = stream;
    capture->mode = mode;
    capture->thread = pthread_self();
    if (handle_list_add(&capture->members, stream) != 0) {
        graph_free(graph);
        free(capture);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *none = NULL;
    int begun = atomic_compare_exchange_strong(&stream->capture, &none, capture);
    if (begun) {
        capture->id = ++last_capture_id;
    }
    pthread_mutex_unlock(&captures_lock);
    if (!begun) {
        free(capture->members.handles);
        graph_free(graph);
        free(capture);
        return CUDA_ERROR_ILLEGAL_STATE; /* the stream is being captured already */
    }
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    if (phGraph == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_handle *stream = NULL;
    pthread_mutex_lock(&captures_lock);
    struct vgpu_capture *capture = capture_of(hStream, &stream);
    CUresult result = CUDA_SUCCESS;
    if (capture == NULL) {
        result = CUDA_ERROR_ILLEGAL_STATE; /* no capture of that stream */
    } else if (capture->origin != stream) {
        result = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED; /* a capture ends on the stream it began on */
    } else if (capture->mode != CU_STREAM_CAPTURE_MODE_RELAXED && !pthread_equal(capture->thread, pthread_self())) {
        result = CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
    } else {
        capture_detach(capture);
    }
    pthread_mutex_unlock(&captures_lock);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    struct vgpu_graph *graph = capture->graph;
    int invalidated = capture->invalidated;
    free(capture);
    if (invalidated) {
        graph_free(graph);
        *phGraph = NULL;
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    }
    *phGraph = (CUgraph)graph;
    return CUDA_SUCCESS;
}

/* What a capture query answers: the status, and while there is a capture its id and graph. */
static CUresult capture_status(CUstream hStream, CUstreamCaptureStatus *status, cuuint64_t *id, CUgraph *graph)
{
    CUresult result = CUDA_SUCCESS;
    int stream_id = 0;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (status == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (device == NULL) {
        return result;
    }
    result = vgpu_stream_id_even_captured(hStream, device, &stream_id);
    if (result != CUDA_SUCCESS) {
        return result;
    }
    pthread_mutex_lock(&captures_lock);
    const struct vgpu_capture *capture = capture_of(hStream, NULL);
    *status = capture == NULL          ? CU_STREAM_CAPTURE_STATUS_NONE
              : capture->invalidated ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                     : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (capture != NULL && id != NULL) {
        *id = capture->id;
    }
    if (capture != NULL && graph != NULL) {
        *graph = (CUgraph)capture->graph;
    }
    pthread_mutex_unlock(&captures_lock);
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    return capture_status(hStream, captureStatus, NULL, NULL);
}

/* The capture's nodes are not handed out (no graph-building call is served to use them): no dependencies. */
CUresult vgpu_served_cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out, CUgraph *graph_out,
                                             const CUgraphNode **dependencies_out,
                                             const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    CUresult result = capture_status(hStream, captureStatus_out, id_out, graph_out);
    if (result == CUDA_SUCCESS && *captureStatus_out != CU_STREAM_CAPTURE_STATUS_NONE) {
        if (dependencies_out != NULL) {
            *dependencies_out = NULL;
        }
        if (edgeData_out != NULL) {
            *edgeData_out = NULL;
        }
        if (numDependencies_out != NULL) {
            *numDependencies_out = 0;
        }
    }
    return result;
}

CUresult vgpu_served_cuStreamGetCaptureInfo_v11030(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                                    cuuint64_t *id_out, CUgraph *graph_out,
                                                    const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
    return vgpu_served_cuStreamGetCaptureInfo(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                                              numDependencies_out);
}

CUresult vgpu_served_cuStreamGetCaptureInfo_v10010(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                                    cuuint64_t *id_out)
{
    return vgpu_served_cuStreamGetCaptureInfo(hStream, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

/* The mode is kept for the program to exchange; a vGPU's captures do not refuse other threads' calls by it. */
CUresult vgpu_served_cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    if (mode == NULL || (*mode != CU_STREAM_CAPTURE_MODE_GLOBAL && *mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                         *mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUstreamCaptureMode previous = thread_capture_mode;
    thread_capture_mode = *mode;
    *mode = previous;
    return CUDA_SUCCESS;
}

/* An instantiated graph: a copy of the graph's nodes. Of the flags, automatic freeing (a vGPU's graphs allocate
   nothing) and node priorities (a hint: a vGPU's streams have one priority) change nothing; a graph launched from the
   device is refused, naming it. */
static CUresult instantiate(CUgraphExec *exec, CUgraph hGraph, unsigned long long flags)
{
    const struct vgpu_graph *graph = graph_of(hGraph, GRAPH_MAGIC);
    if (exec == NULL || graph == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    const unsigned long long harmless = CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY |
                                        CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    if ((flags & CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) != 0) {
        vgpu_say("a graph instantiated for launches from the device is not served on a vGPU");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if ((flags & ~harmless) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct vgpu_graph *copy = graph_new(EXEC_MAGIC, graph->device);
    if (copy == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < graph->count; i++) {
        if (graph_append(copy, &graph->nodes[i], NULL) != 0) {
            graph_free(copy);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    *exec = (CUgraphExec)copy;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph, unsigned long long flags)
{
    return instantiate(phGraphExec, hGraph, flags);
}

CUresult vgpu_served_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                  CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    if (instantiateParams == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult result = instantiate(phGraphExec, hGraph, instantiateParams->flags);
    instantiateParams->hErrNode_out = NULL;
    instantiateParams->result_out =
        result == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return result;
}

/* One recorded node issued on stream, through the call that recorded it. */
static CUresult issue(const struct vgpu_node *node, CUstream stream)
{
    switch (node->kind) {
    case VGPU_NODE_LAUNCH:
        return vgpu_served_cuLaunchKernel((CUfunction)node->function, node->grid[0], node->grid[1], node->grid[2],
                                          node->block[0], node->block[1], node->block[2], node->shared_bytes, stream,
                                          node->parameter_pointers, NULL);
    case VGPU_NODE_MEMSET:
        return vgpu_memset_elements(node->device, node->value, node->element_size, node->count, stream, 1);
    case VGPU_NODE_TO_DEVICE:
        return vgpu_copy_to_device(node->device, node->host, node->count, stream, 1);
    case VGPU_NODE_FROM_DEVICE:
        return vgpu_copy_from_device(node->host, node->source, node->count, stream, 1);
    case VGPU_NODE_ON_DEVICE:
        return vgpu_copy_on_device(node->device, node->source, node->count, stream, 1);
    case VGPU_NODE_HOST_FUNCTION:
        return vgpu_served_cuLaunchHostFunc(stream, node->host_function, node->user_data);
    case VGPU_NODE_COPY_2D:
        return vgpu_served_cuMemcpy2DAsync(&node->copy_2d, stream);
    case VGPU_NODE_COPY_3D:
        return vgpu_served_cuMemcpy3DAsync(&node->copy_3d, stream);
    case VGPU_NODE_MEMSET_2D:
        return vgpu_memset_rows(node->device, node->pitch, node->value, node->element_size, node->count,
                                node->height, stream, 1);
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* The graph's nodes issued on hStream in the order they were captured; the first refusal ends the launch (a failure on
   the worker is reported at the next synchronizing call, as a kernel's fault is). */
CUresult vgpu_served_cuGraphLaunch(CUgraphExec hGraph, CUstream hStream)
{
    const struct vgpu_graph *exec = graph_of(hGraph, EXEC_MAGIC);
    if (exec == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    int stream_id = 0;
    CUresult result = CUDA_SUCCESS;
    struct vgpu_device *device = vgpu_current_stream(hStream, &stream_id, &result);
    if (device == NULL) {
        return result;
    }
    if (device != exec->device) {
        return CUDA_ERROR_INVALID_VALUE; /* a graph runs on the vGPU it was captured on */
    }
    for (size_t i = 0; i < exec->count && result == CUDA_SUCCESS; i++) {
        result = issue(&exec->nodes[i], hStream);
    }
    return result;
}

CUresult vgpu_served_cuGraphUpload(CUgraphExec hGraph, CUstream hStream)
{
    int stream_id = 0;
    CUresult result = CUDA_SUCCESS;
    if (graph_of(hGraph, EXEC_MAGIC) == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return vgpu_current_stream(hStream, &stream_id, &result) == NULL ? result : CUDA_SUCCESS;
}

/* How many nodes the graph has (PyTorch asks, to warn of an empty capture). The nodes are not handed out: no call that
   takes one is served. */
CUresult vgpu_served_cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    struct vgpu_graph *graph = graph_of(hGraph, GRAPH_MAGIC);
    if (graph == NULL || numNodes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (nodes != NULL) {
        vgpu_say("cuGraphGetNodes is served on a vGPU for the count of a graph's nodes, not for the nodes themselves");
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    pthread_mutex_lock(&captures_lock); /* the graph of a capture still recording grows meanwhile */
    *numNodes = graph->count;
    pthread_mutex_unlock(&captures_lock);
    return CUDA_SUCCESS;
}

static CUresult destroy(const void *handle, uint32_t magic)
{
    struct vgpu_graph *graph = graph_of(handle, magic);
    if (graph == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    graph_free(graph);
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuGraphExecDestroy(CUgraphExec hGraphExec)
{
    return destroy(hGraphExec, EXEC_MAGIC);
}

CUresult vgpu_served_cuGraphDestroy(CUgraph hGraph)
{
    return destroy(hGraph, GRAPH_MAGIC);
}
