/*
 * Serving a program's vGPUs: which vGPUs the program has, their sessions with `vgpu run`'s local
 * worker (opened at the first call that needs one), the handles the program holds, and the answer to
 * what is not served. Serving starts when the program's environment names the local worker
 * (VGPU_LOCAL_WORKER, which `vgpu run` sets); the program's vGPUs are VGPU_COUNT windows from
 * VGPU_WINDOW_BASE (the bridge contract's names and sizes).
 */
#include "serving.h"
#include "contract.h"
#include "entry_points.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int vgpu_serving;

static struct vgpu_device *devices;
static int device_count;
static const char *local_worker;
static __thread struct vgpu_handle *current_context;
static struct vgpu_handle *primary_contexts;
static atomic_uchar refused_said[VGPU_ENTRY_POINT_COUNT];

static int parse_u64(const char *text, int base, uint64_t *value)
{
    char *end = NULL;
    errno = 0;
    unsigned long long parsed = strtoull(text, &end, base);
    if (errno != 0 || end == text || *end != '\0') {
        return -1;
    }
    *value = parsed;
    return 0;
}

/* "FIRST-LAST", two decimal numbers. */
static int parse_range(const char *text, uint64_t *first, uint64_t *last)
{
    char copy[32];
    if (strlen(text) >= sizeof copy) {
        return -1;
    }
    strcpy(copy, text);
    char *dash = strchr(copy, '-');
    if (dash == NULL) {
        return -1;
    }
    *dash = '\0';
    return parse_u64(copy, 10, first) != 0 || parse_u64(dash + 1, 10, last) != 0 ? -1 : 0;
}

int vgpu_forked_child;
static atomic_int fork_said;

/* In a child forked while the parent had a session open: the child holds copies of the parent's sockets, and one
   request of the child's on them would interleave with the parent's, so the child refuses instead (vgpu_open). */
static void note_fork_in_child(void)
{
    for (int k = 0; k < device_count; k++) {
        if (devices[k].fd >= 0) {
            vgpu_forked_child = 1;
        }
    }
}

/* At load: serving when the environment names a local worker, with the vGPUs it describes. */
__attribute__((constructor(101))) static void read_plan(void)
{
    local_worker = getenv(VGPU_ENV_LOCAL_WORKER);
    if (local_worker == NULL || local_worker[0] == '\0') {
        return;
    }
    vgpu_serving = 1;
    pthread_atfork(NULL, NULL, note_fork_in_child);
    uint64_t count = 0;
    uint64_t base = VGPU_WINDOW_BASE_DEFAULT;
    const char *count_text = getenv(VGPU_ENV_COUNT);
    const char *base_text = getenv(VGPU_ENV_WINDOW_BASE);
    if (count_text == NULL || parse_u64(count_text, 10, &count) != 0 || count == 0 || count > VGPU_VGPUS_MAX) {
        vgpu_say("%s=%s: the job's vGPU count must be 1..%d; this program sees no vGPU", VGPU_ENV_COUNT,
                 count_text != NULL ? count_text : "(unset)", VGPU_VGPUS_MAX);
        return;
    }
    if (base_text != NULL && (strncmp(base_text, "0x", 2) != 0 || parse_u64(base_text + 2, 16, &base) != 0 ||
                              base % VGPU_WINDOW_ALIGNMENT != 0)) {
        vgpu_say("%s=%s is not a window base (0x and a multiple of 0x%llx); this program sees no vGPU",
                 VGPU_ENV_WINDOW_BASE, base_text, (unsigned long long)VGPU_WINDOW_ALIGNMENT);
        return;
    }
    /* One task of a step of several on this node: vgpu run names the task's share, and device d is vGPU first + d. */
    uint64_t first = 0;
    const char *share_text = getenv(VGPU_ENV_TASK_VGPUS);
    if (share_text != NULL) {
        uint64_t last = 0;
        if (parse_range(share_text, &first, &last) != 0 || first > last || last >= count) {
            vgpu_say("%s=%s is not a share of the job's %llu vGPUs (FIRST-LAST within 0-%llu); this program sees no vGPU",
                     VGPU_ENV_TASK_VGPUS, share_text, (unsigned long long)count, (unsigned long long)(count - 1));
            return;
        }
        count = last - first + 1;
    }
    devices = calloc(count, sizeof *devices);
    primary_contexts = calloc(count, sizeof *primary_contexts);
    if (devices == NULL || primary_contexts == NULL) {
        return;
    }
    for (uint64_t k = 0; k < count; k++) {
        struct vgpu_device *device = &devices[k];
        device->ordinal = (int)k;
        device->index = (int)(first + k);
        device->window_base = base + (first + k) * VGPU_WINDOW_BYTES;
        device->window_size = VGPU_WINDOW_BYTES;
        device->fd = -1;
        device->open_failure = CUDA_ERROR_NOT_INITIALIZED;
        device->next_request_id = 1;
        device->next_remote_id = 1;
        pthread_mutex_init(&device->lock, NULL);
        primary_contexts[k] =
            (struct vgpu_handle){VGPU_HANDLE_MAGIC, VGPU_CONTEXT, device, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    }
    device_count = (int)count;
}

int vgpu_device_count(void)
{
    return device_count;
}

struct vgpu_device *vgpu_device_at(int ordinal)
{
    return ordinal >= 0 && ordinal < device_count ? &devices[ordinal] : NULL;
}

CUresult vgpu_open(struct vgpu_device *device)
{
    if (vgpu_forked_child) {
        if (device->fd >= 0 && device->fd != VGPU_FD_IN_PROCESS) {
            close(device->fd); /* the child's copy only: the parent's session goes on */
        }
        device->fd = -1; /* in this process's runtime: the child has the JVM's memory but none of its threads */
        device->in_process = NULL;
        if (!atomic_exchange(&fork_said, 1)) {
            vgpu_say("CUDA calls on vGPUs are refused in a process forked after its parent used them (the parent's"
                     " sessions with the launcher cannot be shared); fork before using CUDA, or exec a new program");
        }
        return CUDA_ERROR_NOT_INITIALIZED; /* the node's driver's answer in such a child (H200, driver 580) */
    }
    if (device->fd >= 0) {
        return CUDA_SUCCESS;
    }
    if (device->open_failure != CUDA_ERROR_NOT_INITIALIZED) {
        return device->open_failure; /* a session that broke is not opened again behind the program's back */
    }
    device->open_failure = vgpu_connect(device, local_worker);
    atomic_store_explicit(&device->opened, device->open_failure == CUDA_SUCCESS, memory_order_release);
    return device->open_failure;
}

CUresult vgpu_open_locking(struct vgpu_device *device)
{
    /* Every call that finds the current vGPU comes here, a launch of a CUkernel among them (PyTorch's every launch):
       once the session is open it takes no lock, which a served call on another thread may hold for a round trip. A
       session that breaks meanwhile fails the call itself. */
    if (!vgpu_forked_child && atomic_load_explicit(&device->opened, memory_order_acquire)) {
        return CUDA_SUCCESS;
    }
    pthread_mutex_lock(&device->lock);
    CUresult result = vgpu_open(device);
    pthread_mutex_unlock(&device->lock);
    return result;
}

uint64_t vgpu_next_buffer_id(void)
{
    static _Atomic uint64_t last;
    return atomic_fetch_add_explicit(&last, 1, memory_order_relaxed) + 1;
}

int vgpu_next_remote_id(struct vgpu_device *device)
{
    pthread_mutex_lock(&device->lock);
    int id = device->next_remote_id++;
    pthread_mutex_unlock(&device->lock);
    return id;
}

uint64_t vgpu_allocations_end(const struct vgpu_device *device)
{
    uint64_t globals = device->window_size / 2 / VGPU_WINDOW_ALIGNMENT * VGPU_WINDOW_ALIGNMENT;
    return device->window_base + device->window_size -
           (globals < VGPU_MODULE_GLOBALS_BYTES ? globals : VGPU_MODULE_GLOBALS_BYTES);
}

struct vgpu_handle *vgpu_primary_context(struct vgpu_device *device)
{
    return &primary_contexts[device->ordinal];
}

void vgpu_set_current(struct vgpu_handle *context)
{
    current_context = context;
}

struct vgpu_handle *vgpu_get_current(void)
{
    return current_context;
}

struct vgpu_device *vgpu_current_device(CUresult *result)
{
    if (current_context == NULL) {
        *result = CUDA_ERROR_INVALID_CONTEXT;
        return NULL;
    }
    struct vgpu_device *device = current_context->device;
    *result = vgpu_open_locking(device);
    return *result == CUDA_SUCCESS ? device : NULL;
}

struct vgpu_handle *vgpu_handle(const void *handle, enum vgpu_handle_kind kind)
{
    struct vgpu_handle *checked = (struct vgpu_handle *)(uintptr_t)handle;
    return checked != NULL && checked->magic == VGPU_HANDLE_MAGIC && checked->kind == kind ? checked : NULL;
}

struct vgpu_handle *vgpu_new_handle(enum vgpu_handle_kind kind, struct vgpu_device *device, int remote_id)
{
    struct vgpu_handle *handle = calloc(1, sizeof *handle);
    if (handle != NULL) {
        *handle = (struct vgpu_handle){VGPU_HANDLE_MAGIC, kind, device, remote_id, 0, NULL, -1, 0, 0, {0}, NULL};
    }
    return handle;
}

void vgpu_free_handle(struct vgpu_handle *handle)
{
    handle->magic = 0; /* a later use of the freed handle is refused rather than followed */
    free(handle->parameter_sizes);
    free(handle);
}

CUresult vgpu_stream_id_even_captured(CUstream stream, const struct vgpu_device *device, int *id)
{
    if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD) {
        *id = 0;
        return CUDA_SUCCESS;
    }
    struct vgpu_handle *handle = vgpu_handle(stream, VGPU_STREAM);
    if (handle == NULL || handle->device != device) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    *id = handle->remote_id;
    return CUDA_SUCCESS;
}

CUresult vgpu_stream_id(CUstream stream, const struct vgpu_device *device, int *id)
{
    CUresult result = vgpu_stream_id_even_captured(stream, device, id);
    if (result == CUDA_SUCCESS && *id != 0 && vgpu_capturing(stream)) {
        return vgpu_capture_refused(stream);
    }
    return result;
}

struct vgpu_device *vgpu_current_stream(CUstream stream, int *id, CUresult *result)
{
    struct vgpu_device *device = vgpu_current_device(result);
    if (device != NULL && (*result = vgpu_stream_id(stream, device, id)) != CUDA_SUCCESS) {
        device = NULL;
    }
    return device;
}

CUresult vgpu_refuse(int id)
{
    const char *reason = "";
    enum vgpu_disposition disposition = vgpu_entry_disposition(id, &reason);
    if (id >= 0 && id < VGPU_ENTRY_POINT_COUNT && !atomic_exchange(&refused_said[id], 1)) {
        if (disposition == VGPU_REFUSE) {
            vgpu_say("%s is refused on a vGPU: %s", vgpu_entry_name(id), reason);
        } else {
            vgpu_say("%s is not served on a vGPU yet (rcuda-runtime/vgpu-libcuda/README.md lists what is)",
                     vgpu_entry_name(id));
        }
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* request on device's opened session under its lock, as vgpu_call (async 0) or vgpu_send_async; frees the request. */
static CUresult locked(struct vgpu_device *device, struct vgpu_request *request, struct vgpu_reply *reply, int async)
{
    pthread_mutex_lock(&device->lock);
    CUresult result = vgpu_open(device);
    if (result == CUDA_SUCCESS) {
        result = async ? vgpu_send_async(device, request) : vgpu_call(device, request, reply);
    }
    pthread_mutex_unlock(&device->lock);
    vgpu_request_free(request);
    return result;
}

CUresult vgpu_locked_call(struct vgpu_device *device, struct vgpu_request *request, struct vgpu_reply *reply)
{
    return locked(device, request, reply, 0);
}

CUresult vgpu_locked_send_async(struct vgpu_device *device, struct vgpu_request *request)
{
    return locked(device, request, NULL, 1);
}
