/*
 * Direct calls: a native vGPU's launches, copies, memsets and synchronizations made to the node's driver itself, when
 * the program's vGPUs are served in its own process (VGPU_LIBCUDA_SERVING=in-process), unless VGPU_LIBCUDA_DIRECT=off.
 * Served, each of those calls crosses into vgpu's Java runtime (about 2 us on the H200, as much as an empty launch costs);
 * direct, it is the driver's call with the driver's handles, which the runtime looks up once per handle. The runtime
 * serves every other call (allocations, modules, streams, events) and stays the one that knows the vGPU's state; a
 * vGPU device pointer is the driver's own on a native vGPU (the window's addresses are mapped there), so kernel
 * parameters and copies pass as they are.
 *
 * The rule (the runtime's DirectDriverCalls): a direct call is made only while the vGPU's direct calls are open, with
 * driver handles asked since they last opened. A migration stops them before it locks the vGPU (the runtime calls
 * vgpu_direct_stop, which ends the epoch and waits for the calls under way) and resumes them after; whatever was asked
 * in an earlier epoch is asked again, since the vGPU may run on another GPU now, or on none of this process (a remote
 * worker: the runtime answers NONE, and the calls are served). A call that cannot be direct is served, always: a stream
 * of another flavour, parameters packed in extra, an address outside the vGPU's allocations (a module variable's), a
 * large copy with page-locked memory vgpu gave, a synchronization while a served asynchronous request's failure may
 * wait for it.
 *
 * Entering a direct call and stopping them is Dekker's handshake, as the runtime's CallGate: the caller counts itself
 * in, then reads the state and the epoch; the stopper sets the state and ends the epoch, then waits for the count.
 */
#include "serving.h"
#include "contract.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The node's driver's own functions a direct call makes. */
static struct {
    CUresult (*ctx_get_current)(CUcontext *);
    CUresult (*ctx_set_current)(CUcontext);
    CUresult (*launch_kernel)(CUfunction, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
                              unsigned int, unsigned int, CUstream, void **, void **);
    CUresult (*ctx_synchronize)(void);
    CUresult (*stream_synchronize)(CUstream);
    CUresult (*memcpy_to_device)(CUdeviceptr, const void *, size_t);
    CUresult (*memcpy_to_device_async)(CUdeviceptr, const void *, size_t, CUstream);
    CUresult (*memcpy_from_device)(void *, CUdeviceptr, size_t);
    CUresult (*memcpy_from_device_async)(void *, CUdeviceptr, size_t, CUstream);
    CUresult (*memset_d8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*memset_d8_async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*memset_d16)(CUdeviceptr, unsigned short, size_t);
    CUresult (*memset_d16_async)(CUdeviceptr, unsigned short, size_t, CUstream);
    CUresult (*memset_d32)(CUdeviceptr, unsigned int, size_t);
    CUresult (*memset_d32_async)(CUdeviceptr, unsigned int, size_t, CUstream);
    int found;
} driver;
static pthread_once_t driver_looked = PTHREAD_ONCE_INIT;

static void *driver_function(void *library, const char *name, int *missing)
{
    void *function = library == NULL ? NULL : dlsym(library, name);
    if (function == NULL) {
        *missing = 1;
    }
    return function;
}

static void look_up_driver(void)
{
    void *library = vgpu_real_driver();
    int missing = 0;
    *(void **)&driver.ctx_get_current = driver_function(library, "cuCtxGetCurrent", &missing);
    *(void **)&driver.ctx_set_current = driver_function(library, "cuCtxSetCurrent", &missing);
    *(void **)&driver.launch_kernel = driver_function(library, "cuLaunchKernel", &missing);
    *(void **)&driver.ctx_synchronize = driver_function(library, "cuCtxSynchronize", &missing);
    *(void **)&driver.stream_synchronize = driver_function(library, "cuStreamSynchronize", &missing);
    *(void **)&driver.memcpy_to_device = driver_function(library, "cuMemcpyHtoD_v2", &missing);
    *(void **)&driver.memcpy_to_device_async = driver_function(library, "cuMemcpyHtoDAsync_v2", &missing);
    *(void **)&driver.memcpy_from_device = driver_function(library, "cuMemcpyDtoH_v2", &missing);
    *(void **)&driver.memcpy_from_device_async = driver_function(library, "cuMemcpyDtoHAsync_v2", &missing);
    *(void **)&driver.memset_d8 = driver_function(library, "cuMemsetD8_v2", &missing);
    *(void **)&driver.memset_d8_async = driver_function(library, "cuMemsetD8Async", &missing);
    *(void **)&driver.memset_d16 = driver_function(library, "cuMemsetD16_v2", &missing);
    *(void **)&driver.memset_d16_async = driver_function(library, "cuMemsetD16Async", &missing);
    *(void **)&driver.memset_d32 = driver_function(library, "cuMemsetD32_v2", &missing);
    *(void **)&driver.memset_d32_async = driver_function(library, "cuMemsetD32Async", &missing);
    driver.found = !missing;
}

/* Whether direct calls are wanted: unless VGPU_LIBCUDA_DIRECT is off; a value neither on nor off is said once. */
static int asked(void)
{
    const char *value = getenv(VGPU_ENV_LIBCUDA_DIRECT);
    if (value == NULL || value[0] == '\0' || strcmp(value, "on") == 0) {
        return 1;
    }
    if (strcmp(value, "off") != 0) {
        static _Atomic int said;
        if (!atomic_exchange(&said, 1)) {
            vgpu_say("%s=%s: expected on or off; every call is served", VGPU_ENV_LIBCUDA_DIRECT, value);
        }
    }
    return 0;
}

void vgpu_direct_offer(struct vgpu_device *device)
{
    if (device->in_process == NULL || !asked()) {
        return;
    }
    int offered = vgpu_in_process_offer_direct(device);
    if (offered < 0) {
        static _Atomic int said;
        if (!atomic_exchange(&said, 1)) {
            vgpu_say("vgpu's runtime in this process offers no direct calls (its vgpu.jar is older than this library);"
                     " every call is served");
        }
        return;
    }
    if (offered) {
        atomic_store(&device->direct.moves_known, 1); /* the runtime took the library's stop: each move ends an epoch */
    }
    pthread_once(&driver_looked, look_up_driver);
    if (!offered || !driver.found) {
        if (offered && vgpu_real_driver() != NULL) { /* without a driver (the CPU emulation) none could be direct */
            vgpu_say("vGPU %d: no direct calls: the node's driver lacks a function they make; every call is served",
                     device->index);
        }
        return; /* they stay off: a migration's resume opens them only where the driver has what they call */
    }
    int off = VGPU_DIRECT_OFF;
    /* a stop that came first (a migration as the session opened) leaves them stopped until its resume */
    atomic_compare_exchange_strong(&device->direct.state, &off, VGPU_DIRECT_OPEN);
}

/* The first millisecond a stop waits is spent yielding (a launch or copy under way ends within microseconds); after it,
   sleeping, as a synchronization under way lasts as long as the GPU's work. */
#define YIELDING_NANOS 1000000LL

static int wait_for_calls_under_way(struct vgpu_device *device, long long timeout_nanos)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (atomic_load(&device->direct.in_flight) != 0) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long waited = (now.tv_sec - start.tv_sec) * 1000000000LL + (now.tv_nsec - start.tv_nsec);
        if (timeout_nanos >= 0 && waited >= timeout_nanos) {
            return 0;
        }
        if (waited < YIELDING_NANOS) {
            sched_yield();
        } else {
            nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
        }
    }
    return 1;
}

/* Stops device's direct calls: no call enters from now on, and handles asked before are asked again. */
static int stop(struct vgpu_device *device, int new_state, long long timeout_nanos)
{
    atomic_store(&device->direct.state, new_state);
    atomic_fetch_add(&device->direct.epoch, 1);
    return wait_for_calls_under_way(device, timeout_nanos);
}

/* How long a closing session waits for the direct calls under way: then it closes anyway, saying so, rather than hold
   the program's exit for a GPU whose work does not end (the driver, at a plain program's exit, waits for none). */
#define END_WAIT_NANOS (10LL * 1000000000LL)

int vgpu_direct_end_within(struct vgpu_device *device, long long timeout_nanos)
{
    if (stop(device, VGPU_DIRECT_OFF, timeout_nanos)) {
        return 1;
    }
    vgpu_say("vGPU %d: %d direct driver calls were still under way %.1f s after its session began to close; it closes"
             " anyway", device->index, atomic_load(&device->direct.in_flight), (double)timeout_nanos / 1e9);
    return 0;
}

void vgpu_direct_end(struct vgpu_device *device)
{
    vgpu_direct_end_within(device, END_WAIT_NANOS);
}

static struct vgpu_device *by_index(int index)
{
    for (int k = 0; k < vgpu_device_count(); k++) {
        struct vgpu_device *device = vgpu_device_at(k);
        if (device->index == index) {
            return device;
        }
    }
    return NULL;
}

int vgpu_direct_stop(int index, long long timeout_nanos)
{
    struct vgpu_device *device = by_index(index);
    return device == NULL || stop(device, VGPU_DIRECT_STOPPED, timeout_nanos);
}

void vgpu_direct_resume(int index)
{
    struct vgpu_device *device = by_index(index);
    int stopped = VGPU_DIRECT_STOPPED;
    if (device != NULL && driver.found) {
        atomic_compare_exchange_strong(&device->direct.state, &stopped, VGPU_DIRECT_OPEN);
    }
}

void vgpu_direct_served_async(struct vgpu_device *device)
{
    atomic_fetch_add_explicit(&device->direct.served_async, 1, memory_order_relaxed);
}

int vgpu_direct_sync_mark(struct vgpu_device *device)
{
    return atomic_load_explicit(&device->direct.served_async, memory_order_relaxed);
}

void vgpu_direct_synchronized(struct vgpu_device *device, int mark)
{
    /* only when no other thread's asynchronous request was served meanwhile: that one's failure still waits */
    atomic_compare_exchange_strong(&device->direct.served_async, &mark, 0);
}

unsigned vgpu_kept_tag(struct vgpu_device *device)
{
    if (!atomic_load_explicit(&device->direct.moves_known, memory_order_acquire)) {
        return 0;
    }
    return atomic_load_explicit(&device->direct.epoch, memory_order_acquire) + 1;
}

unsigned vgpu_kept_setting_tag(struct vgpu_device *device)
{
    unsigned tag = vgpu_kept_tag(device);
    unsigned changes = atomic_load_explicit(&device->settings_changed, memory_order_acquire);
    /* the epoch's tag in the low 20 bits, the changes above them; 0, which keeps nothing, where vgpu_kept_tag's is */
    return tag == 0 ? 0 : (tag & 0xfffffu) | changes << 20;
}

void vgpu_settings_changed(struct vgpu_device *device)
{
    atomic_fetch_add_explicit(&device->settings_changed, 1, memory_order_acq_rel);
}

int vgpu_kept_answer(_Atomic uint64_t *kept, unsigned tag, int *value)
{
    if (tag == 0) {
        return 0;
    }
    uint64_t answer = atomic_load_explicit(kept, memory_order_acquire);
    if ((unsigned)(answer >> 32) != tag) {
        return 0;
    }
    *value = (int)(uint32_t)answer;
    return 1;
}

void vgpu_keep_answer(_Atomic uint64_t *kept, unsigned tag, int value)
{
    if (tag != 0) {
        atomic_store_explicit(kept, (uint64_t)tag << 32 | (uint32_t)value, memory_order_release);
    }
}

/* The epoch direct calls of device may be made in now, or 0 when they may not (0 is never an open epoch's + 1). */
static unsigned open_epoch(struct vgpu_device *device)
{
    if (atomic_load_explicit(&device->direct.state, memory_order_acquire) != VGPU_DIRECT_OPEN ||
        vgpu_in_process_closed_at_exit() || /* the exit closed the vGPUs: their contexts may be gone */
        atomic_load_explicit(&device->direct.deferred, memory_order_acquire)) { /* served ones wait: they go first */
        return 0;
    }
    return atomic_load_explicit(&device->direct.epoch, memory_order_acquire) + 1;
}

/* A driver handle kept in *driver for the epoch it was asked in (*asked_in): asked again in a later one. Under the
   device's lock, so one thread asks and the others find it; readers that find an older epoch's ask again. */
static uint64_t driver_handle(struct vgpu_device *device, unsigned epoch, _Atomic uint64_t *kept,
                              _Atomic unsigned *asked_in, enum vgpu_driver_handle which, int id)
{
    if (atomic_load_explicit(asked_in, memory_order_acquire) == epoch) {
        return atomic_load_explicit(kept, memory_order_relaxed);
    }
    pthread_mutex_lock(&device->lock);
    uint64_t handle;
    if (atomic_load_explicit(asked_in, memory_order_acquire) == epoch) {
        handle = atomic_load_explicit(kept, memory_order_relaxed);
    } else {
        handle = vgpu_in_process_driver_handle(device, which, id);
        atomic_store_explicit(kept, handle, memory_order_relaxed);
        atomic_store_explicit(asked_in, epoch, memory_order_release);
    }
    pthread_mutex_unlock(&device->lock);
    return handle;
}

/* The driver's stream for stream (legacy default: NULL), in *driver_stream; 0 when none may be used directly. */
static int driver_stream(struct vgpu_device *device, unsigned epoch, CUstream stream, CUstream *driver_stream)
{
    if (stream == NULL || stream == CU_STREAM_LEGACY) {
        *driver_stream = NULL;
        return 1;
    }
    struct vgpu_handle *handle = vgpu_handle(stream, VGPU_STREAM); /* the per-thread default stream is served */
    if (handle == NULL || handle->device != device) {
        return 0;
    }
    uint64_t found = driver_handle(device, epoch, &handle->driver, &handle->driver_epoch, VGPU_DRIVER_STREAM,
                                   handle->remote_id);
    *driver_stream = (CUstream)(uintptr_t)found;
    return found != VGPU_DIRECT_NONE;
}

/*
 * Enters a direct call on device in epoch: 1 once it is counted in, with the vGPU's context current on this thread;
 * 0 when it may not be made (stopped, or a stop ended the epoch since its handles were asked).
 */
static int enter(struct vgpu_device *device, unsigned epoch)
{
    uint64_t context = driver_handle(device, epoch, &device->direct.context, &device->direct.context_epoch,
                                     VGPU_DRIVER_CONTEXT, 0);
    if (context == VGPU_DIRECT_NONE) {
        return 0;
    }
    atomic_fetch_add(&device->direct.in_flight, 1);
    if (atomic_load(&device->direct.state) != VGPU_DIRECT_OPEN || atomic_load(&device->direct.epoch) + 1 != epoch) {
        atomic_fetch_sub(&device->direct.in_flight, 1);
        return 0;
    }
    CUcontext current = NULL;
    if (driver.ctx_get_current(&current) != CUDA_SUCCESS ||
        ((uintptr_t)current != context && driver.ctx_set_current((CUcontext)(uintptr_t)context) != CUDA_SUCCESS)) {
        atomic_fetch_sub(&device->direct.in_flight, 1);
        return 0;
    }
    vgpu_direct_calls_made++;
    return 1;
}

static void leave(struct vgpu_device *device)
{
    atomic_fetch_sub_explicit(&device->direct.in_flight, 1, memory_order_release);
}

int vgpu_direct_launch(struct vgpu_handle *function, const unsigned int grid[3], const unsigned int block[3],
                       unsigned int shared_bytes, CUstream stream, void **parameters, CUresult *result)
{
    struct vgpu_device *device = function->device;
    unsigned epoch = open_epoch(device);
    if (epoch == 0) {
        return 0;
    }
    CUstream on = NULL;
    uint64_t kernel = driver_handle(device, epoch, &function->driver, &function->driver_epoch, VGPU_DRIVER_FUNCTION,
                                    function->remote_id);
    if (kernel == VGPU_DIRECT_NONE || !driver_stream(device, epoch, stream, &on) || !enter(device, epoch)) {
        return 0;
    }
    *result = driver.launch_kernel((CUfunction)(uintptr_t)kernel, grid[0], grid[1], grid[2], block[0], block[1],
                                   block[2], shared_bytes, on, parameters, NULL);
    leave(device);
    return 1;
}

int vgpu_direct_copies_at(const struct vgpu_device *device, uint64_t address, size_t bytes)
{
    uint64_t end = vgpu_allocations_end(device);
    return address >= device->window_base && bytes <= end - device->window_base &&
           address - device->window_base <= end - device->window_base - bytes;
}

/*
 * From this size on, a copy with page-locked memory vgpu gave the program (cuMemHostAlloc) is served: the driver does
 * not know that memory as page-locked (the runtime registered its own mapping of it), so a direct copy would be a
 * pageable one, 8-14 GB/s on the H200 against 54 served. Below it, the 2 us the runtime's serving costs outweigh what
 * the pageable copy loses.
 */
#define SERVED_SHARED_COPY_BYTES ((size_t)64 << 10)

/* Enters a direct call on bytes of device memory at address, on stream (the driver's in *on): 0 when it is to be
   served. */
static int enter_on_memory(struct vgpu_device *device, uint64_t address, size_t bytes, CUstream stream, CUstream *on)
{
    unsigned epoch = open_epoch(device);
    return epoch != 0 && vgpu_direct_copies_at(device, address, bytes) && driver_stream(device, epoch, stream, on) &&
           enter(device, epoch);
}

/* Enters a direct copy between device memory at address and host memory: as enter_on_memory, and served for a large
   copy with page-locked memory vgpu gave. */
static int enter_copy(struct vgpu_device *device, uint64_t address, const void *host, size_t bytes, CUstream stream,
                      CUstream *on)
{
    uint32_t region;
    uint64_t offset;
    return (bytes < SERVED_SHARED_COPY_BYTES || !vgpu_host_region_at(host, bytes, &region, &offset)) &&
           enter_on_memory(device, address, bytes, stream, on);
}

int vgpu_direct_copy_to_device(struct vgpu_device *device, uint64_t dst, const void *src, size_t bytes,
                               CUstream stream, int async, CUresult *result)
{
    CUstream on = NULL;
    if (!enter_copy(device, dst, src, bytes, stream, &on)) {
        return 0;
    }
    *result = async ? driver.memcpy_to_device_async((CUdeviceptr)dst, src, bytes, on)
                    : driver.memcpy_to_device((CUdeviceptr)dst, src, bytes);
    leave(device);
    return 1;
}

int vgpu_direct_copy_from_device(struct vgpu_device *device, void *dst, uint64_t src, size_t bytes, CUstream stream,
                                 int async, CUresult *result)
{
    CUstream on = NULL;
    if (!enter_copy(device, src, dst, bytes, stream, &on)) {
        return 0;
    }
    *result = async ? driver.memcpy_from_device_async(dst, (CUdeviceptr)src, bytes, on)
                    : driver.memcpy_from_device(dst, (CUdeviceptr)src, bytes);
    leave(device);
    return 1;
}

int vgpu_direct_memset(struct vgpu_device *device, uint64_t dst, uint32_t value, int element_size, size_t count,
                       CUstream stream, int async, CUresult *result)
{
    CUstream on = NULL;
    if ((element_size != 1 && element_size != 2 && element_size != 4) || count > SIZE_MAX / (size_t)element_size ||
        !enter_on_memory(device, dst, count * (size_t)element_size, stream, &on)) {
        return 0;
    }
    if (element_size == 1) {
        *result = async ? driver.memset_d8_async((CUdeviceptr)dst, (unsigned char)value, count, on)
                        : driver.memset_d8((CUdeviceptr)dst, (unsigned char)value, count);
    } else if (element_size == 2) {
        *result = async ? driver.memset_d16_async((CUdeviceptr)dst, (unsigned short)value, count, on)
                        : driver.memset_d16((CUdeviceptr)dst, (unsigned short)value, count);
    } else {
        *result = async ? driver.memset_d32_async((CUdeviceptr)dst, value, count, on)
                        : driver.memset_d32((CUdeviceptr)dst, value, count);
    }
    leave(device);
    return 1;
}

int vgpu_direct_synchronize(struct vgpu_device *device, CUstream stream, int whole_context, CUresult *result)
{
    unsigned epoch = open_epoch(device);
    CUstream on = NULL;
    if (epoch == 0 || atomic_load_explicit(&device->direct.served_async, memory_order_relaxed) ||
        (!whole_context && !driver_stream(device, epoch, stream, &on)) || !enter(device, epoch)) {
        return 0;
    }
    *result = whole_context ? driver.ctx_synchronize() : driver.stream_synchronize(on);
    leave(device);
    return 1;
}
