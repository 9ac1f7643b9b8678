/*
 * vgpu's libcuda.so.1 serving a program's vGPUs: what the served entry points share. Each vGPU is a
 * session with `vgpu run`'s local worker (the remote GPU worker's protocol over a Unix socket), which
 * serves it with the job's migratable vGPU: the library keeps only what the program's handles and
 * pointers need on this side.
 */
#ifndef VGPU_SERVING_H
#define VGPU_SERVING_H

#include "libcuda_internal.h"
#include "served.h"
#include "vgpu_wire.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* One allocation of the program: the worker is sent it rounded up to the window's granularity. */
struct vgpu_allocation {
    uint64_t address;
    uint64_t bytes;
    uint64_t buffer_id; /* the process-wide id cuPointerGetAttribute gives it */
};

/* A module variable whose address the program was given: memory of its vGPU until its module is unloaded. */
struct vgpu_module_variable {
    struct vgpu_allocation memory;
    int module_id;
};

/* A vGPU's direct calls (direct.c): its hottest calls made to the node's driver itself, in process. */
enum vgpu_direct_state { VGPU_DIRECT_OFF, VGPU_DIRECT_OPEN, VGPU_DIRECT_STOPPED };
struct vgpu_direct {
    _Atomic int state;       /* enum vgpu_direct_state: OFF until offered, STOPPED while the vGPU moves */
    _Atomic int in_flight;   /* direct calls under way */
    _Atomic unsigned epoch;  /* ended by every stop: driver handles asked in an earlier epoch are asked again */
    _Atomic unsigned context_epoch; /* epoch + 1 that context was asked in; 0: never */
    _Atomic uint64_t context;       /* the CUcontext, VGPU_DIRECT_NONE while the vGPU runs on no GPU of this process */
    _Atomic int served_async;       /* asynchronous requests served since a served synchronization: a failure of
                                       theirs is reported by the next one, so synchronizations are served until then */
    _Atomic int moves_known;        /* 1 once the runtime stops this library's direct calls before each move of the
                                       vGPU (it took them: in process), so each move ends an epoch */
    _Atomic int deferred;           /* 1 while asynchronous requests wait in the library to be served (in_process.c):
                                       calls are served until they went, so that they reach the GPU in order */
};

struct vgpu_device {
    int ordinal; /* the program's CUDA device number */
    int index;   /* the job's vGPU index, which the local worker knows it by: ordinal + the task's first */
    uint64_t window_base;
    uint64_t window_size;
    pthread_mutex_t lock; /* one request at a time on the session */
    int fd;               /* the session's socket, -1 until opened; VGPU_FD_IN_PROCESS when served in this process */
    _Atomic int opened;   /* 1 while the session is open: read without the lock by vgpu_open_locking */
    struct vgpu_in_process *in_process; /* the session in this process's own runtime (in_process.c); NULL: a socket's */
    /* asynchronous requests sent since the worker last answered one: it may not have taken them yet */
    unsigned int unanswered;
    CUresult open_failure;
    uint32_t next_request_id;
    int next_remote_id;
    /* the worker's WELCOME: the GPU (or emulation) behind the vGPU */
    char name[256];
    uint64_t total_memory;
    int compute_major;
    int compute_minor;
    int multiprocessors;
    int max_threads_per_block;
    int warp_size;
    int emulated;
    struct vgpu_direct direct;
    _Atomic uint64_t kept_attributes[CU_DEVICE_ATTRIBUTE_MAX]; /* answers kept until the vGPU moves (vgpu_kept_tag) */
    _Atomic unsigned settings_changed; /* how often the program changed what a kept setting answers */
    _Atomic int cache_config;          /* the context's cache preference (CUfunc_cache) as the program last set it */
    struct vgpu_allocation *allocations; /* sorted by address */
    size_t allocation_count;
    size_t allocation_capacity;
    struct vgpu_module_variable *variables; /* those whose address the program asked (cuModuleGetGlobal) */
    size_t variable_count;
    size_t variable_capacity;
    int primary_retains;
};

#define VGPU_HANDLE_MAGIC 0x76677075u /* "vgpu": a handle of this library's, not the driver's */

enum vgpu_handle_kind { VGPU_CONTEXT = 1, VGPU_MODULE, VGPU_FUNCTION, VGPU_STREAM, VGPU_EVENT, VGPU_LIBRARY, VGPU_KERNEL };

/* What CUcontext, CUmodule, CUfunction, CUstream and CUevent point to on a vGPU. */
struct vgpu_handle {
    uint32_t magic;
    enum vgpu_handle_kind kind;
    struct vgpu_device *device;
    int remote_id;            /* the id the worker knows it by (streams: 0 is the default stream) */
    int parameter_count;      /* functions: the kernel's parameters, as the worker read them */
    int *parameter_sizes;
    int max_dynamic_shared;   /* functions: the dynamic shared memory a launch may ask for; -1 until asked */
    _Atomic uint64_t driver;  /* functions and streams: the driver's handle behind it, for direct calls */
    _Atomic unsigned driver_epoch; /* the direct epoch + 1 driver was asked in; 0: never */
    _Atomic uint64_t kept_attributes[CU_FUNC_ATTRIBUTE_MAX]; /* functions: answers kept until the vGPU moves */
    struct vgpu_capture *_Atomic capture; /* streams: the capture recording their work; events: the capture they were
                                              recorded in (served_graphs.c) */
};

/* serving.c */
int vgpu_device_count(void);
struct vgpu_device *vgpu_device_at(int ordinal);
CUresult vgpu_open(struct vgpu_device *device);
/* vgpu_open under the device's lock. */
CUresult vgpu_open_locking(struct vgpu_device *device);
/* A new id for a buffer of the program's (device or page-locked host memory), never given before in this process. */
uint64_t vgpu_next_buffer_id(void);
/* The allocation of device that holds address, or the module variable whose address was given (below), in *found:
   1, or 0 when none does. */
int vgpu_allocation_at(struct vgpu_device *device, uint64_t address, struct vgpu_allocation *found);
/* Keeps a module variable of module_id at address, bytes long, whose address the program is given, so that what a
   pointer into it is can be answered; kept once however often it is asked. 0, or -1 when there is no memory for it. */
int vgpu_keep_module_variable(struct vgpu_device *device, int module_id, uint64_t address, uint64_t bytes);
/* Forgets the module variables of module_id (its module is unloaded). */
void vgpu_forget_module_variables(struct vgpu_device *device, int module_id);
/* The page-locked host memory this library gave (cuMemHostAlloc) that holds host: 1 with its start, length and buffer
   id, or 0 when none does. */
int vgpu_host_block_at(const void *host, uintptr_t *start, size_t *bytes, uint64_t *buffer_id);
/* A new id for a module, function, stream or event of device, as the worker will know it. */
int vgpu_next_remote_id(struct vgpu_device *device);
struct vgpu_handle *vgpu_primary_context(struct vgpu_device *device);
/* Where device's allocations end in its window: above, the runtime's addresses of module variables, which are not the
   driver's (the runtime's ModuleGlobals keeps the same area). */
uint64_t vgpu_allocations_end(const struct vgpu_device *device);
/* The calling thread's current context's vGPU, opened; NULL with *result set when there is none. */
struct vgpu_device *vgpu_current_device(CUresult *result);
void vgpu_set_current(struct vgpu_handle *context);
struct vgpu_handle *vgpu_get_current(void);
/* handle, checked to be one of this library's of kind (NULL: CUDA_ERROR_INVALID_HANDLE). */
struct vgpu_handle *vgpu_handle(const void *handle, enum vgpu_handle_kind kind);
struct vgpu_handle *vgpu_new_handle(enum vgpu_handle_kind kind, struct vgpu_device *device, int remote_id);
void vgpu_free_handle(struct vgpu_handle *handle);
/* The stream's id on the worker for a CUstream argument (NULL and the legacy/per-thread defaults: 0). A stream being
   captured is refused (vgpu_capture_refused): a call that puts work on a stream and gets here is one that is not
   recorded. */
CUresult vgpu_stream_id(CUstream stream, const struct vgpu_device *device, int *id);
/* As vgpu_stream_id, also for a stream being captured: for the calls that ask about a stream, not put work on it. */
CUresult vgpu_stream_id_even_captured(CUstream stream, const struct vgpu_device *device, int *id);

/* served_graphs.c: CUDA graphs made by stream capture. While a stream is captured, the work the calls below put on it
   is recorded as a node of the capture's graph instead of being sent, and a graph's launch issues its nodes on the
   launch's stream, in the order they were captured, through the same calls. */
enum vgpu_node_kind {
    VGPU_NODE_LAUNCH,       /* a kernel: function, grid, block, shared_bytes, the parameters' values */
    VGPU_NODE_MEMSET,       /* device, value, element_size, count */
    VGPU_NODE_TO_DEVICE,    /* device from host, bytes (the host memory is read when the graph runs) */
    VGPU_NODE_FROM_DEVICE,  /* host from source, bytes */
    VGPU_NODE_ON_DEVICE,    /* device from source, bytes */
    VGPU_NODE_HOST_FUNCTION, /* host_function(user_data) */
    VGPU_NODE_COPY_2D,      /* copy_2d (its host memory read or written when the graph runs) */
    VGPU_NODE_COPY_3D,      /* copy_3d (likewise) */
    VGPU_NODE_MEMSET_2D     /* device, pitch, value, element_size, count elements a row, height rows */
};
struct vgpu_node {
    enum vgpu_node_kind kind;
    struct vgpu_handle *function;
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_bytes;
    uint8_t *parameters; /* a launch's parameter values one after another, as function->parameter_sizes says */
    void **parameter_pointers; /* the launch's kernelParams, into parameters: one allocation with them, owned */
    uint64_t device;
    uint64_t source;
    void *host;
    size_t count; /* bytes of a copy, elements of a memset */
    uint32_t value;
    int element_size;
    CUhostFn host_function;
    void *user_data;
    CUDA_MEMCPY2D_v2 copy_2d;
    CUDA_MEMCPY3D_v2 copy_3d;
    size_t pitch;
    size_t height;
};
/* Whether stream is one of this library's streams being captured: work put on it is to be recorded (vgpu_capture). */
int vgpu_capturing(CUstream stream);
/* Records node on stream's capture, a launch's parameters copied from kernel_params;
   CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once the capture is invalidated. */
CUresult vgpu_capture(CUstream stream, const struct vgpu_node *node, void **kernel_params);
/* The answer to a call that puts work on stream while it is captured and is not recorded: the capture is invalidated
   (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, said once; CUDA_ERROR_STREAM_CAPTURE_INVALIDATED once it is). */
CUresult vgpu_capture_refused(CUstream stream);
/* stream, being destroyed, leaves its capture; the stream a capture began on ends it. */
void vgpu_capture_forget(struct vgpu_handle *stream);
/* event, being destroyed, is a point of no capture any more. */
void vgpu_capture_forget_event(struct vgpu_handle *event);
/* An event recorded on a captured stream: a point of the capture, and nothing is sent. 1 with *result set when stream
   is being captured; 0 when not (the record is the vGPU's). */
int vgpu_capture_event_record(struct vgpu_handle *event, CUstream stream, CUresult *result);
/* A wait of stream for an event recorded in a capture: the stream joins the capture (a fork), and nothing is sent. 1
   with *result set when the event belongs to a capture; 0 when not (the wait is the vGPU's). */
int vgpu_capture_event_wait(CUstream stream, struct vgpu_handle *event, CUresult *result);

/* served_modules.c: the length of an image the driver is handed without one (a fatbin wrapper's is its fatbin's:
   *image moves to the fatbin). */
size_t vgpu_image_bytes(const void **image);
/* served_modules.c: hands each kernel of module (a CUmodule of a vGPU) to receive(to, its function), a function
   handle as cuModuleGetFunction gives; answers how many, or -1 when they cannot be listed (said once). */
int vgpu_each_module_kernel(CUmodule module, void (*receive)(void *to, CUfunction function), void *to);
/* served_modules.c: loads an image on device as a module of its own. */
CUresult vgpu_load_module(struct vgpu_device *device, const void *image, size_t bytes, struct vgpu_handle **module);
/* served_libraries.c: the function a launch means: a CUfunction, or a CUkernel's function on the current vGPU. */
struct vgpu_handle *vgpu_launchable(const void *handle);
/* served_libraries.c: a CUkernel's function on device, found there at its first use (CUDA_ERROR_INVALID_HANDLE when
   handle is no kernel of the program's). */
CUresult vgpu_kernel_function_on(CUkernel handle, struct vgpu_device *device, struct vgpu_handle **function);
/* served_functions.c: a kernel attribute as the vGPU's backend answers it, or as vgpu answers those no backend
   varies. */
CUresult vgpu_function_attribute(struct vgpu_handle *function, CUfunction_attribute attribute, int *value);

/* served_functions.c: the dynamic shared memory a launch of function may ask for, as last asked or set (-1: not
   known yet); set by a launch that asked and by cuFuncSetAttribute, maybe on another thread. */
int vgpu_known_dynamic_shared(struct vgpu_handle *function);
void vgpu_know_dynamic_shared(struct vgpu_handle *function, int bytes);

/* served_occupancy.c: what an occupancy depends on, of the kernel's and of the GPU behind the vGPU. */
struct vgpu_occupancy {
    int registers; /* per thread */
    int static_shared;
    int max_threads;
    int max_dynamic_shared;
    int warp_size;
    int threads_per_multiprocessor;
    int blocks_per_multiprocessor;
    int registers_per_multiprocessor;
    int registers_per_block;
    int shared_per_multiprocessor;
    int reserved_shared_per_block;
    int multiprocessors;
};
/* How many blocks of block_size threads, each with dynamic_shared bytes, one multiprocessor holds at once. */
int vgpu_resident_blocks(const struct vgpu_occupancy *in, int block_size, size_t dynamic_shared);
/* The block size (at most size_limit threads when positive) that keeps the most threads resident, the largest of
   those, and the grid that fills the device with it; dynamic shared memory is dynamic_of_size's answer for a block
   size, dynamic_shared without it. */
void vgpu_best_block_size(const struct vgpu_occupancy *in, CUoccupancyB2DSize dynamic_of_size, size_t dynamic_shared,
                          int size_limit, int *block_size, int *grid_size);

/* served_host_memory.c: whether host..host+bytes lies in page-locked memory shared with the launcher, and if so in
   which of its regions, from which offset. */
int vgpu_host_region_at(const void *host, size_t bytes, uint32_t *region, uint64_t *offset);

/* served_memory.c: the copies and memsets of the current vGPU, as cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD and
   cuMemsetD8/16/32 make them, or their Async forms on stream when async (element_size 1, 2 or 4). */
CUresult vgpu_copy_to_device(CUdeviceptr_v2 dst, const void *src, size_t bytes, CUstream stream, int async);
CUresult vgpu_copy_from_device(void *dst, CUdeviceptr_v2 src, size_t bytes, CUstream stream, int async);
CUresult vgpu_copy_on_device(CUdeviceptr_v2 dst, CUdeviceptr_v2 src, size_t bytes, CUstream stream, int async);
CUresult vgpu_memset_elements(CUdeviceptr_v2 dst, uint32_t value, int element_size, size_t count, CUstream stream,
                              int async);
/* served_memory.c: items (count of them, each item_bytes, room for *capacity) with room for one more, grown to twice
   its capacity (first when it has none); NULL, items untouched, when there is no memory for it. */
void *vgpu_with_room_for_one(void *items, size_t count, size_t *capacity, size_t item_bytes, size_t first);
/* served_pitched.c: a memset of height rows of width elements (element_size 1, 2 or 4), pitch bytes apart, as
   cuMemsetD2D8/16/32 make it, or its Async form on stream when async. */
CUresult vgpu_memset_rows(CUdeviceptr_v2 dst, size_t pitch, uint32_t value, int element_size, size_t width,
                          size_t height, CUstream stream, int async);
/* served_memory.c: a copy between device_address and bytes of page-locked memory shared with the launcher, named by its
   region and offset (opcode MEMCPY_HTOD_FROM_REGION or MEMCPY_DTOH_TO_REGION) on stream; async: sent without waiting. */
CUresult vgpu_copy_with_region(struct vgpu_device *device, int opcode, int stream, uint64_t device_address,
                               uint32_t region, uint64_t offset, size_t bytes, int async);

/* The current vGPU, opened, with stream checked to be one of its own and its id set (the worker takes a session's
   requests in the order the program issued them); NULL with *result set when not. */
struct vgpu_device *vgpu_current_stream(CUstream stream, int *id, CUresult *result);

/* wire.c: requests on a vGPU's session. A request is built in a vgpu_request, then sent with
   vgpu_call (waits for its OK or ERROR; the OK's body is in reply) or, for the calls CUDA makes asynchronous,
   vgpu_send_async (waits for nothing), while the device's lock is held. */
struct vgpu_request {
    uint8_t *data;
    size_t length;
    size_t capacity;
    int failed; /* out of memory: vgpu_call answers CUDA_ERROR_OUT_OF_MEMORY */
};
struct vgpu_reply {
    uint8_t *body;
    size_t length;
    size_t read;
    int truncated; /* a read past the body's end: vgpu_reply_ok says so */
};
void vgpu_request_begin(struct vgpu_request *request, int opcode);
void vgpu_put_u8(struct vgpu_request *request, uint8_t value);
void vgpu_put_u16(struct vgpu_request *request, uint16_t value);
void vgpu_put_u32(struct vgpu_request *request, uint32_t value);
void vgpu_put_u64(struct vgpu_request *request, uint64_t value);
void vgpu_put_bytes(struct vgpu_request *request, const void *bytes, size_t length);
void vgpu_put_string(struct vgpu_request *request, const char *text);
void vgpu_request_free(struct vgpu_request *request);
uint32_t vgpu_get_u32(struct vgpu_reply *reply);
uint64_t vgpu_get_u64(struct vgpu_reply *reply);
uint16_t vgpu_get_u16(struct vgpu_reply *reply);
uint8_t vgpu_get_u8(struct vgpu_reply *reply);
/* a string of the reply, copied into text (at most size - 1 bytes kept) */
void vgpu_get_string(struct vgpu_reply *reply, char *text, size_t size);
CUresult vgpu_reply_ok(const struct vgpu_reply *reply);
void vgpu_reply_free(struct vgpu_reply *reply);
/* Sends the request and waits for its answer; frees the request. reply may be NULL. */
CUresult vgpu_call(struct vgpu_device *device, struct vgpu_request *request, struct vgpu_reply *reply);
/* How many asynchronous requests may be sent without an answer from the worker: at this many, the next one waits
   until the worker has taken those (README.md, "Asynchronous calls"). */
#define VGPU_ASYNC_WINDOW 1024u
/* Sends the request with FLAG_ASYNC: the worker answers nothing when it succeeds and keeps its failure for the next
   synchronizing request, which reports it instead of running (as CUDA reports a kernel's fault at the next
   synchronizing call). Frees the request. */
CUresult vgpu_send_async(struct vgpu_device *device, struct vgpu_request *request);
/* A copy to the device in chunks of one request; waits for its answer. */
CUresult vgpu_send_to_device(struct vgpu_device *device, uint64_t dst, const void *src, size_t bytes);
/* As vgpu_send_to_device on stream, sent with FLAG_ASYNC (as vgpu_send_async): the bytes are in the request, so the
   program's memory is free when this returns, and nothing is waited for. */
CUresult vgpu_send_to_device_async(struct vgpu_device *device, int stream, uint64_t dst, const void *src,
                                   size_t bytes);
/* A copy from the device: the worker's DATA frames land in dst. */
CUresult vgpu_fetch_from_device(struct vgpu_device *device, uint64_t src, void *dst, size_t bytes);
/* Rows of device memory (a 2-D copy's device side): height rows of width bytes (neither 0), pitch bytes apart. */
struct vgpu_rows {
    uint64_t start;
    size_t pitch;
    size_t width;
    size_t height;
};
/* A 2-D copy to the device: the rows of src (src_pitch bytes apart) to dst's, as one scattered copy; waits for its
   answer. */
CUresult vgpu_send_rows_to_device(struct vgpu_device *device, const struct vgpu_rows *dst, const void *src,
                                  size_t src_pitch);
/* A 2-D copy from the device: src's rows, gathered, land in rows of dst dst_pitch bytes apart. */
CUresult vgpu_fetch_rows_from_device(struct vgpu_device *device, const struct vgpu_rows *src, void *dst,
                                     size_t dst_pitch);
/* vgpu_call on an opened session, under the device's lock; frees the request in every case. */
CUresult vgpu_locked_call(struct vgpu_device *device, struct vgpu_request *request, struct vgpu_reply *reply);
/* vgpu_send_async on an opened session, under the device's lock; frees the request in every case. */
CUresult vgpu_locked_send_async(struct vgpu_device *device, struct vgpu_request *request);
/* Connects the session and says HELLO; fills the device's WELCOME fields. */
CUresult vgpu_connect(struct vgpu_device *device, const char *socket_path);
void vgpu_disconnect(struct vgpu_device *device);

/* direct.c: a native vGPU's launches, copies and synchronizations made to the node's driver itself, in process
   (VGPU_LIBCUDA_DIRECT=on). Each answers 1 with *result set when it made the call, 0 when the call is to be served. */
#define VGPU_DIRECT_NONE UINT64_MAX /* a driver handle asked while there is none to give (Java's NONE, -1) */
/* After the session opened in process: asks the runtime to let this library call the driver itself. */
void vgpu_direct_offer(struct vgpu_device *device);
/* As the session closes: no direct call any more, waiting up to 10 s for those under way. */
void vgpu_direct_end(struct vgpu_device *device);
/* vgpu_direct_end with its wait bounded by timeout_nanos: 1 when none was under way at its end, else 0 (said). */
int vgpu_direct_end_within(struct vgpu_device *device, long long timeout_nanos);
/* The runtime's migration stops and resumes them (LibraryDirectCalls); by the job's vGPU index. */
int vgpu_direct_stop(int index, long long timeout_nanos);
void vgpu_direct_resume(int index);
/* wire.c: an asynchronous request was served, whose failure the next served synchronization reports. */
void vgpu_direct_served_async(struct vgpu_device *device);
int vgpu_direct_launch(struct vgpu_handle *function, const unsigned int grid[3], const unsigned int block[3],
                       unsigned int shared_bytes, CUstream stream, void **parameters, CUresult *result);
int vgpu_direct_copy_to_device(struct vgpu_device *device, uint64_t dst, const void *src, size_t bytes,
                               CUstream stream, int async, CUresult *result);
int vgpu_direct_copy_from_device(struct vgpu_device *device, void *dst, uint64_t src, size_t bytes, CUstream stream,
                                 int async, CUresult *result);
/* element_size 1, 2 or 4 (cuMemsetD8, cuMemsetD16, cuMemsetD32) */
int vgpu_direct_memset(struct vgpu_device *device, uint64_t dst, uint32_t value, int element_size, size_t count,
                       CUstream stream, int async, CUresult *result);
/* stream NULL with whole_context: the context's synchronization. */
int vgpu_direct_synchronize(struct vgpu_device *device, CUstream stream, int whole_context, CUresult *result);
/* Answers of the vGPU's backend that change only when the vGPU moves (a device's attributes, a kernel's own), kept
   under the tag that vgpu_kept_tag gives before they are asked: the direct epoch + 1 while each move of the vGPU is
   known to end the epoch (in process, the runtime stops the direct calls first), 0 otherwise, and then nothing is
   kept. An answer asked in an epoch a move ended is never found again. */
unsigned vgpu_kept_tag(struct vgpu_device *device);
/* The tag an answer the program may change (a kernel's settable attributes) is kept under: vgpu_kept_tag's, changed too
   by each vgpu_settings_changed on the device, since a set through any handle of a kernel changes what all answer. */
unsigned vgpu_kept_setting_tag(struct vgpu_device *device);
void vgpu_settings_changed(struct vgpu_device *device);
int vgpu_kept_answer(_Atomic uint64_t *kept, unsigned tag, int *value);
void vgpu_keep_answer(_Atomic uint64_t *kept, unsigned tag, int value);
/* Whether bytes at address of device may be copied directly: they lie among its allocations, whose window addresses are
   the driver's (a module variable's is not). */
int vgpu_direct_copies_at(const struct vgpu_device *device, uint64_t address, size_t bytes);
/* Around a served synchronization: what was served asynchronously before it (the mark) has reported its failures
   when it returns. */
int vgpu_direct_sync_mark(struct vgpu_device *device);
void vgpu_direct_synchronized(struct vgpu_device *device, int mark);

/* in_process.c: the session served by vgpu's Java runtime in this process (VGPU_LIBCUDA_SERVING=in-process), through
   one JNI call a request; what wire.c does with the socket otherwise. */
/* Stands for the socket of a session served in this process: an open session, though no descriptor. */
#define VGPU_FD_IN_PROCESS 0x7fffffff
CUresult vgpu_in_process_open(struct vgpu_device *device);
int vgpu_in_process_write(struct vgpu_device *device, const void *bytes, size_t length, int asynchronous);
/* Serves the asynchronous requests that wait in the library, if any; under the device's lock. 0, or -1 when the
   session broke. */
int vgpu_in_process_flush(struct vgpu_device *device);
int vgpu_in_process_read(struct vgpu_device *device, void *bytes, size_t length);
void vgpu_in_process_close(struct vgpu_device *device);
/* The runtime's answers for direct calls (InProcessWorker.Session): the driver's handles of the vGPU's session
   (VGPU_DIRECT_NONE when there is none to give), and whether it lets this library call the driver itself. */
enum vgpu_driver_handle { VGPU_DRIVER_CONTEXT, VGPU_DRIVER_FUNCTION, VGPU_DRIVER_STREAM };
uint64_t vgpu_in_process_driver_handle(struct vgpu_device *device, enum vgpu_driver_handle which, int id);
/* 1 offered, 0 not (the vGPU is not migratable), -1 when the runtime has no direct calls (an older vgpu.jar). */
int vgpu_in_process_offer_direct(struct vgpu_device *device);
/* Whether the program is exiting and its vGPUs served in this process were closed: its calls then fail quietly. */
int vgpu_in_process_closed_at_exit(void);

#endif
