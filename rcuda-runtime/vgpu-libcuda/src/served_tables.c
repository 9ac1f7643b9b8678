/*
 * Served on a vGPU: the driver's hidden tables, which the CUDA runtime asks for with cuGetExportTable at its
 * start and checks (README.md, "The driver's hidden tables", says what each is and where that is known
 * from). Each table is vgpu's own, on top of the served vGPUs; a slot vgpu does not serve is a function that
 * refuses, naming the table and the slot, so a runtime that calls it fails with a message, never with a wrong
 * result. A table id vgpu does not know is refused naming the id.
 */
#include "served_tables.h"
#include "serving.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TABLE_BYTES(slots) ((const void *)(uintptr_t)((slots) * sizeof(void *)))

enum table_index {
    RUNTIME_INTERFACE,
    TOOLS_THREAD_STATE,
    TOOLS_CALLBACK_HOOKS,
    CONTEXT_LOCAL_STORAGE,
    CONTEXT_CHECKS,
    INTEGRITY,
    TOOLS_CONTEXT,
    FFT_SUPPORT,
    TABLE_COUNT
};

struct table_description {
    uint8_t id[16];
    const char *name;
};

static const struct table_description TABLES[TABLE_COUNT] = {
    [RUNTIME_INTERFACE] = {{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d,
                            0xf9},
                           "the CUDA runtime's interface"},
    [TOOLS_THREAD_STATE] = {{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec,
                             0xdc},
                            "the tools' thread state"},
    [TOOLS_CALLBACK_HOOKS] = {{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c,
                               0x0a, 0x66},
                              "the tools' callback hooks"},
    [CONTEXT_LOCAL_STORAGE] = {{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8,
                                0x95, 0x93},
                               "context-local storage"},
    [CONTEXT_CHECKS] = {{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa,
                         0x7e},
                        "context checks"},
    [INTEGRITY] = {{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
                   "the integrity check"},
    [TOOLS_CONTEXT] = {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2},
                       "the tools' context"},
    [FFT_SUPPORT] = {{0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e},
                     "asked for by cuFFT"},
};

/* Asked by CUDA 13's runtime first; a driver that answers it lets the runtime skip its usual start, so the
   driver's answer "no such table" is the one that keeps the runtime on the path the tables above serve. */
static const uint8_t START_SHORTCUT[16] = {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e,
                                           0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9};

/* Whether each call into a table is said (VGPU_LIBCUDA_VERBOSE): set at load, read-only after. */
static int tracing;

__attribute__((constructor(101))) static void decide_tracing(void)
{
    tracing = getenv("VGPU_LIBCUDA_VERBOSE") != NULL;
}

static void trace(enum table_index table, int slot)
{
    if (tracing) {
        char id[37];
        vgpu_table_id_text((const CUuuid *)(const void *)TABLES[table].id, id);
        vgpu_say("table %s (%s) slot %d called", id, TABLES[table].name, slot);
    }
}

static CUresult unserved_slot(enum table_index table, int slot)
{
    char id[37];
    vgpu_table_id_text((const CUuuid *)(const void *)TABLES[table].id, id);
    vgpu_say("the CUDA runtime called slot %d of the driver's table %s (%s), which vgpu does not serve on a vGPU", slot,
             id, TABLES[table].name);
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* One refusing function per slot not served, so that a call names its slot (its arguments are not read). */
#define UNSERVED(table, slot)                                                                                        \
    static CUresult unserved_##table##_##slot(void)                                                                \
    {                                                                                                                \
        return unserved_slot(table, slot);                                                                           \
    }

/* ---- the CUDA runtime's interface: its slot 2 gives a device's primary context */

static CUresult primary_context(CUcontext *context, CUdevice device)
{
    trace(RUNTIME_INTERFACE, 2);
    return vgpu_served_cuDevicePrimaryCtxRetain(context, device);
}

UNSERVED(RUNTIME_INTERFACE, 1)
UNSERVED(RUNTIME_INTERFACE, 3)
UNSERVED(RUNTIME_INTERFACE, 4)
UNSERVED(RUNTIME_INTERFACE, 5)
UNSERVED(RUNTIME_INTERFACE, 6)
UNSERVED(RUNTIME_INTERFACE, 7)
UNSERVED(RUNTIME_INTERFACE, 8)
UNSERVED(RUNTIME_INTERFACE, 9)
UNSERVED(RUNTIME_INTERFACE, 10)
UNSERVED(RUNTIME_INTERFACE, 11)
UNSERVED(RUNTIME_INTERFACE, 12)

static const void *const runtime_interface[13] = {
    TABLE_BYTES(13),
    (const void *)unserved_RUNTIME_INTERFACE_1,
    (const void *)primary_context,
    (const void *)unserved_RUNTIME_INTERFACE_3,
    (const void *)unserved_RUNTIME_INTERFACE_4,
    (const void *)unserved_RUNTIME_INTERFACE_5,
    (const void *)unserved_RUNTIME_INTERFACE_6,
    (const void *)unserved_RUNTIME_INTERFACE_7,
    (const void *)unserved_RUNTIME_INTERFACE_8,
    (const void *)unserved_RUNTIME_INTERFACE_9,
    (const void *)unserved_RUNTIME_INTERFACE_10,
    (const void *)unserved_RUNTIME_INTERFACE_11,
    (const void *)unserved_RUNTIME_INTERFACE_12,
};

/* ---- the tools' thread state: its slot 2 gives the calling thread's current context */

static CUresult tools_current_context(CUcontext *context)
{
    trace(TOOLS_THREAD_STATE, 2);
    return vgpu_served_cuCtxGetCurrent(context);
}

UNSERVED(TOOLS_THREAD_STATE, 1)
UNSERVED(TOOLS_THREAD_STATE, 3)

static const void *const tools_thread_state[4] = {
    TABLE_BYTES(4),
    (const void *)unserved_TOOLS_THREAD_STATE_1,
    (const void *)tools_current_context,
    (const void *)unserved_TOOLS_THREAD_STATE_3,
};

/* ---- the tools' callback hooks: slots 2 and 6 give the runtime memory where tools' hooks would be written;
   no tool writes there on a vGPU (CUPTI is not served), so the runtime finds them empty */

static uint64_t callback_hooks[1024];
static uint64_t callback_flags[8];

static void hooks_area(void **area, size_t *bytes)
{
    trace(TOOLS_CALLBACK_HOOKS, 2);
    *area = callback_hooks;
    *bytes = sizeof callback_hooks;
}

static void hooks_flags(void **area, size_t *bytes)
{
    trace(TOOLS_CALLBACK_HOOKS, 6);
    *area = callback_flags;
    *bytes = sizeof callback_flags;
}

UNSERVED(TOOLS_CALLBACK_HOOKS, 1)
UNSERVED(TOOLS_CALLBACK_HOOKS, 3)
UNSERVED(TOOLS_CALLBACK_HOOKS, 4)
UNSERVED(TOOLS_CALLBACK_HOOKS, 5)

static const void *const tools_callback_hooks[7] = {
    TABLE_BYTES(7),
    (const void *)unserved_TOOLS_CALLBACK_HOOKS_1,
    (const void *)hooks_area,
    (const void *)unserved_TOOLS_CALLBACK_HOOKS_3,
    (const void *)unserved_TOOLS_CALLBACK_HOOKS_4,
    (const void *)unserved_TOOLS_CALLBACK_HOOKS_5,
    (const void *)hooks_flags,
};

/* ---- context-local storage: the runtime keeps its state of each context under a key of its own */

typedef void (*context_value_destructor)(CUcontext, void *, void *);

struct context_value {
    CUcontext context;
    void *key;
    void *value;
    context_value_destructor destructor; /* kept: a vGPU's context is never destroyed while the program runs */
    struct context_value *next;
};

static struct context_value *context_values;
static pthread_mutex_t context_values_lock = PTHREAD_MUTEX_INITIALIZER;

/* The context a slot means: the one named, or the calling thread's current one. */
static CUcontext meant_context(CUcontext context)
{
    return context != NULL ? context : (CUcontext)vgpu_get_current();
}

static struct context_value **find_value(const void *context, const void *key)
{
    struct context_value **link = &context_values;
    while (*link != NULL && ((const void *)(*link)->context != context || (*link)->key != key)) {
        link = &(*link)->next;
    }
    return link;
}

static CUresult context_value_put(CUcontext context, void *key, void *value, context_value_destructor destructor)
{
    trace(CONTEXT_LOCAL_STORAGE, 0);
    context = meant_context(context);
    if (vgpu_handle(context, VGPU_CONTEXT) == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&context_values_lock);
    struct context_value **link = find_value(context, key);
    CUresult result = CUDA_SUCCESS;
    if (*link == NULL) {
        *link = calloc(1, sizeof **link);
        result = *link == NULL ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    }
    if (*link != NULL) {
        **link = (struct context_value){context, key, value, destructor, (*link)->next};
    }
    pthread_mutex_unlock(&context_values_lock);
    return result;
}

static CUresult context_value_delete(CUcontext context, void *key)
{
    trace(CONTEXT_LOCAL_STORAGE, 1);
    context = meant_context(context);
    pthread_mutex_lock(&context_values_lock);
    struct context_value **link = find_value(context, key);
    struct context_value *found = *link;
    if (found != NULL) {
        *link = found->next;
        free(found);
    }
    pthread_mutex_unlock(&context_values_lock);
    return CUDA_SUCCESS;
}

static CUresult context_value_get(void **value, CUcontext context, void *key)
{
    trace(CONTEXT_LOCAL_STORAGE, 2);
    if (value == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *value = NULL;
    context = meant_context(context);
    if (vgpu_handle(context, VGPU_CONTEXT) == NULL) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    pthread_mutex_lock(&context_values_lock);
    struct context_value *found = *find_value(context, key);
    if (found != NULL) {
        *value = found->value;
    }
    pthread_mutex_unlock(&context_values_lock);
    return found != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

UNSERVED(CONTEXT_LOCAL_STORAGE, 3)

static const void *const context_local_storage[4] = {
    (const void *)context_value_put,
    (const void *)context_value_delete,
    (const void *)context_value_get,
    (const void *)unserved_CONTEXT_LOCAL_STORAGE_3,
};

/* ---- context checks: a vGPU's context is an ordinary one, with nothing for the runtime to mind */

static CUresult context_check(CUcontext context, unsigned int *flags, const void **detail)
{
    (void)context;
    trace(CONTEXT_CHECKS, 2);
    if (flags != NULL) {
        *flags = 0;
    }
    if (detail != NULL) {
        *detail = NULL;
    }
    return CUDA_SUCCESS;
}

static unsigned int contexts_check(void)
{
    trace(CONTEXT_CHECKS, 3);
    return 0;
}

UNSERVED(CONTEXT_CHECKS, 0)
UNSERVED(CONTEXT_CHECKS, 1)

static const void *const context_checks[4] = {
    (const void *)unserved_CONTEXT_CHECKS_0,
    (const void *)unserved_CONTEXT_CHECKS_1,
    (const void *)context_check,
    (const void *)contexts_check,
};

/* ---- the integrity check: a keyed digest of the tables' addresses, the versions, the caller and the devices,
   which the runtime computes too and compares */

static const uint8_t INTEGRITY_KEY[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                                          0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

/* The answer the runtime expects for versions ending in 0 or 1 (a check of the check), and for 1 with its
   eighth byte 24. */
static const uint64_t KNOWN_ANSWER[2] = {UINT64_C(0x3341181c03cb675c), UINT64_C(0x8ed383aa1f4cd1e8)};

#define INTEGRITY_INPUT_BYTES 48
#define INTEGRITY_DEVICE_BYTES 28

static uint8_t *put_le(uint8_t *at, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        at[i] = (uint8_t)(value >> (8 * i));
    }
    return at + bytes;
}

void vgpu_integrity_digest(const struct vgpu_integrity_input *input, const struct vgpu_integrity_device *devices,
                           int device_count, uint64_t digest[2])
{
    if (input->runtime_version % 10 < 2) {
        digest[0] = KNOWN_ANSWER[0];
        digest[1] = KNOWN_ANSWER[1];
        if (input->runtime_version % 10 == 1) {
            digest[0] = (digest[0] & ~(UINT64_C(0xff) << 56)) | (UINT64_C(24) << 56);
        }
        return;
    }
    uint8_t message[INTEGRITY_INPUT_BYTES + VGPU_INTEGRITY_DEVICES_MAX * INTEGRITY_DEVICE_BYTES];
    uint8_t *at = message;
    at = put_le(at, input->driver_version, 4);
    at = put_le(at, input->runtime_version, 4);
    at = put_le(at, input->process, 4);
    at = put_le(at, input->thread, 4);
    at = put_le(at, input->runtime_table, 8);
    at = put_le(at, input->integrity_table, 8);
    at = put_le(at, input->function, 8);
    at = put_le(at, input->unix_seconds, 8);
    for (int k = 0; k < device_count && k < VGPU_INTEGRITY_DEVICES_MAX; k++) {
        memcpy(at, devices[k].uuid.bytes, sizeof devices[k].uuid.bytes);
        at += sizeof devices[k].uuid.bytes;
        at = put_le(at, devices[k].pci_domain, 4);
        at = put_le(at, devices[k].pci_bus, 4);
        at = put_le(at, devices[k].pci_device, 4);
    }
    uint8_t bytes[16];
    vgpu_hmac_md2(INTEGRITY_KEY, message, (size_t)(at - message), bytes);
    uint8_t *read = bytes;
    for (int half = 0; half < 2; half++) {
        digest[half] = 0;
        for (int i = 7; i >= 0; i--) {
            digest[half] = digest[half] << 8 | read[i];
        }
        read += 8;
    }
}

static const void *const integrity[3];

/* The CUDA version whose runtime's tables these are: an older runtime, which says its version here, is refused. */
#define TABLES_RUNTIME_VERSION 13000

static atomic_int older_runtime_said;

static CUresult integrity_check(unsigned int runtime_version, uint64_t unix_seconds, uint64_t digest[2])
{
    trace(INTEGRITY, 1);
    if (digest == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (runtime_version < TABLES_RUNTIME_VERSION) {
        if (!atomic_exchange(&older_runtime_said, 1)) {
            vgpu_say("the CUDA runtime %u.%u is refused on a vGPU: vgpu serves the driver's hidden tables as CUDA %d's"
                     " runtime calls them, and an older one's slots may mean other things (build the program with"
                     " CUDA %d)",
                     runtime_version / 1000, runtime_version % 1000 / 10, TABLES_RUNTIME_VERSION / 1000,
                     TABLES_RUNTIME_VERSION / 1000);
        }
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    int driver_version = 0;
    vgpu_served_cuDriverGetVersion(&driver_version);
    struct vgpu_integrity_input input = {
        (uint32_t)driver_version,
        runtime_version,
        (uint32_t)getpid(),
        (uint32_t)(uintptr_t)pthread_self(),
        (uint64_t)(uintptr_t)runtime_interface,
        (uint64_t)(uintptr_t)integrity,
        (uint64_t)(uintptr_t)integrity_check,
        unix_seconds,
    };
    /* the devices as the runtime sees them through the served entry points */
    struct vgpu_integrity_device devices[VGPU_INTEGRITY_DEVICES_MAX];
    int count = vgpu_device_count();
    for (int k = 0; k < count && k < VGPU_INTEGRITY_DEVICES_MAX; k++) {
        int domain = 0;
        int bus = 0;
        int device = 0;
        CUresult result = vgpu_served_cuDeviceGetUuid(&devices[k].uuid, k);
        if (result == CUDA_SUCCESS) {
            result = vgpu_served_cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, k);
        }
        if (result == CUDA_SUCCESS) {
            result = vgpu_served_cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, k);
        }
        if (result == CUDA_SUCCESS) {
            result = vgpu_served_cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, k);
        }
        if (result != CUDA_SUCCESS) {
            return result;
        }
        devices[k].pci_domain = (uint32_t)domain;
        devices[k].pci_bus = (uint32_t)bus;
        devices[k].pci_device = (uint32_t)device;
    }
    vgpu_integrity_digest(&input, devices, count, digest);
    return CUDA_SUCCESS;
}

UNSERVED(INTEGRITY, 2)

static const void *const integrity[3] = {
    TABLE_BYTES(3),
    (const void *)integrity_check,
    (const void *)unserved_INTEGRITY_2,
};

/* ---- two tables few of whose slots' meanings are established from public facts: the tools' context (asked for by
   cuBLAS and PyTorch's libraries at their start) and the one cuFFT asks for. Their sizes are the driver's (CUDA 13.0,
   driver 580, on an H200: 93 and 99 slots, slot 0 the size in bytes), which a caller may check. Of the tools' context
   slot 4 is served: a context's id, as cuCtxGetId gives it (two independent public notes on this table say so; cuBLASLt
   calls it for each matrix product it plans, and gives up when refused). Of cuFFT's, slot 7 (below). Every other slot
   refuses, naming its table and slot, if called. */

static CUresult tools_context_id(CUcontext context, unsigned long long *id)
{
    trace(TOOLS_CONTEXT, 4);
    return vgpu_served_cuCtxGetId(context, id);
}

#define SLOTS_8_TO_92(X, table) X(table, 8) X(table, 9) X(table, 10) \
    X(table, 11) X(table, 12) X(table, 13) X(table, 14) X(table, 15) X(table, 16) X(table, 17) X(table, 18) \
    X(table, 19) X(table, 20) X(table, 21) X(table, 22) X(table, 23) X(table, 24) X(table, 25) X(table, 26) \
    X(table, 27) X(table, 28) X(table, 29) X(table, 30) X(table, 31) X(table, 32) X(table, 33) X(table, 34) \
    X(table, 35) X(table, 36) X(table, 37) X(table, 38) X(table, 39) X(table, 40) X(table, 41) X(table, 42) \
    X(table, 43) X(table, 44) X(table, 45) X(table, 46) X(table, 47) X(table, 48) X(table, 49) X(table, 50) \
    X(table, 51) X(table, 52) X(table, 53) X(table, 54) X(table, 55) X(table, 56) X(table, 57) X(table, 58) \
    X(table, 59) X(table, 60) X(table, 61) X(table, 62) X(table, 63) X(table, 64) X(table, 65) X(table, 66) \
    X(table, 67) X(table, 68) X(table, 69) X(table, 70) X(table, 71) X(table, 72) X(table, 73) X(table, 74) \
    X(table, 75) X(table, 76) X(table, 77) X(table, 78) X(table, 79) X(table, 80) X(table, 81) X(table, 82) \
    X(table, 83) X(table, 84) X(table, 85) X(table, 86) X(table, 87) X(table, 88) X(table, 89) X(table, 90) \
    X(table, 91) X(table, 92)
#define SLOTS_5_TO_92(X, table) X(table, 5) X(table, 6) X(table, 7) SLOTS_8_TO_92(X, table)
#define SLOTS_1_TO_6(X, table) X(table, 1) X(table, 2) X(table, 3) X(table, 4) X(table, 5) X(table, 6)
#define SLOTS_93_TO_98(X, table) X(table, 93) X(table, 94) X(table, 95) X(table, 96) X(table, 97) X(table, 98)
#define UNSERVED_ENTRY(table, slot) (const void *)unserved_##table##_##slot,
#define UNSERVED_STATEMENT(table, slot) UNSERVED(table, slot)

UNSERVED(TOOLS_CONTEXT, 1)
UNSERVED(TOOLS_CONTEXT, 2)
UNSERVED(TOOLS_CONTEXT, 3)
SLOTS_5_TO_92(UNSERVED_STATEMENT, TOOLS_CONTEXT)
SLOTS_1_TO_6(UNSERVED_STATEMENT, FFT_SUPPORT)
SLOTS_8_TO_92(UNSERVED_STATEMENT, FFT_SUPPORT)
SLOTS_93_TO_98(UNSERVED_STATEMENT, FFT_SUPPORT)

/*
 * cuFFT's slot 7, served as what the node's driver was seen to do (not from a public description): cuFFT calls it once
 * for each module it loads, with the context, the module, a function of its own, an address, the module again and a
 * table of its own. Traced on the node's driver (VGPU_LIBCUDA_TRACE_TABLES=6e163fbe; CUDA 13.0, driver 580, H200), it
 * answered 1 and a new driver object appeared at the address; cuFFT's function is two instructions that store its
 * second argument where its first points; and cuFFT then asked that object's attributes as a function's and launched
 * it. So the slot hands each of the module's kernels to the function with the address, and answers how many. Here
 * each is a vGPU's function handle, found by name as cuModuleGetFunction finds it (so a migration replays it); a call
 * of another shape, or a module whose kernels cannot be listed, answers 0 (none) and is said.
 */
static int module_kernels_to(CUcontext context, CUmodule module, void (*receive)(void *to, CUfunction function),
                             void *to, CUmodule module_again, const void *callers_table)
{
    (void)context;
    (void)callers_table;
    trace(FFT_SUPPORT, 7);
    if (receive == NULL || to == NULL || module != module_again) {
        static atomic_int said;
        if (!atomic_exchange(&said, 1)) {
            vgpu_say("slot 7 of cuFFT's table was called with arguments vgpu has not seen the driver given; no kernel"
                     " handed out");
        }
        return 0;
    }
    int count = vgpu_each_module_kernel(module, receive, to);
    return count < 0 ? 0 : count;
}

static const void *const tools_context[93] = {
    TABLE_BYTES(93),
    (const void *)unserved_TOOLS_CONTEXT_1,
    (const void *)unserved_TOOLS_CONTEXT_2,
    (const void *)unserved_TOOLS_CONTEXT_3,
    (const void *)tools_context_id,
    SLOTS_5_TO_92(UNSERVED_ENTRY, TOOLS_CONTEXT)};

static const void *const fft_support[99] = {
    TABLE_BYTES(99),
    SLOTS_1_TO_6(UNSERVED_ENTRY, FFT_SUPPORT)(const void *) module_kernels_to,
    SLOTS_8_TO_92(UNSERVED_ENTRY, FFT_SUPPORT) SLOTS_93_TO_98(UNSERVED_ENTRY, FFT_SUPPORT)};

static const void *const *const SERVED[TABLE_COUNT] = {
    [RUNTIME_INTERFACE] = runtime_interface,         [TOOLS_THREAD_STATE] = tools_thread_state,
    [TOOLS_CALLBACK_HOOKS] = tools_callback_hooks,   [CONTEXT_LOCAL_STORAGE] = context_local_storage,
    [CONTEXT_CHECKS] = context_checks,               [INTEGRITY] = integrity,
    [TOOLS_CONTEXT] = tools_context,                 [FFT_SUPPORT] = fft_support,
};

static atomic_int refusals_said;

CUresult vgpu_served_export_table(const void **table, const CUuuid *id)
{
    for (int t = 0; t < TABLE_COUNT; t++) {
        if (memcmp(id->bytes, TABLES[t].id, sizeof TABLES[t].id) == 0) {
            *table = SERVED[t];
            return CUDA_SUCCESS;
        }
    }
    if (memcmp(id->bytes, START_SHORTCUT, sizeof START_SHORTCUT) == 0) {
        return CUDA_ERROR_NOT_FOUND;
    }
    char text[37];
    vgpu_table_id_text(id, text);
    if (atomic_fetch_add(&refusals_said, 1) < 16) {
        vgpu_say("the driver's table %s is not served on a vGPU: vgpu does not know it (README.md lists the tables "
                 "it serves)",
                 text);
    }
    return CUDA_ERROR_NOT_SUPPORTED;
}
