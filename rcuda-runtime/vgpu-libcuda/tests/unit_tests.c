/*
 * Unit tests of vgpu's libcuda.so.1 that need no GPU and no driver: how cuGetProcAddress chooses,
 * what the generated tables hold, and that a call with no driver behind it fails with an error
 * instead of crashing. Run under AddressSanitizer + UBSan by `make test`.
 */
#include "libcuda_internal.h"
#include "entry_points.h"
#include "served_tables.h"
#include "serving.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define EXPECT(condition)                                                                            \
    do {                                                                                             \
        if (!(condition)) {                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #condition);                    \
            failures++;                                                                              \
        }                                                                                            \
    } while (0)

static const struct vgpu_proc_entry *find(const char *name, int version, cuuint64_t flags)
{
    return vgpu_find_proc_entry(name, version, flags);
}

static void newest_version_the_program_knows(void)
{
    const struct vgpu_proc_entry *entry = find("cuMemAlloc", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
    EXPECT(entry != NULL && entry->version == 3020);
    entry = find("cuStreamGetCaptureInfo", 13000, CU_GET_PROC_ADDRESS_DEFAULT);
    const struct vgpu_proc_entry *older = find("cuStreamGetCaptureInfo", 11030, CU_GET_PROC_ADDRESS_DEFAULT);
    EXPECT(entry != NULL && older != NULL && entry->version > older->version && older->version <= 11030);
}

static void per_thread_variant_when_asked(void)
{
    const struct vgpu_proc_entry *legacy = find("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
    const struct vgpu_proc_entry *per_thread =
        find("cuMemcpyHtoD", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
    EXPECT(legacy != NULL && legacy->flavor == VGPU_STREAM_LEGACY);
    EXPECT(per_thread != NULL && per_thread->flavor == VGPU_STREAM_PER_THREAD);
    EXPECT(legacy != per_thread && legacy->function != per_thread->function);
    /* a call that takes no stream has one function for both */
    EXPECT(find("cuInit", 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ==
           find("cuInit", 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM));
}

static void lookups_answer_as_the_driver_does(void)
{
    void *function = (void *)1;
    CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
    EXPECT(cuGetProcAddress_v2("cuNoSuchCall", &function, 13000, 0, &status) == CUDA_ERROR_NOT_FOUND);
    EXPECT(function == NULL && status == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    EXPECT(cuGetProcAddress_v2("cuMemAlloc", &function, 1000, 0, &status) == CUDA_ERROR_NOT_FOUND);
    EXPECT(status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    EXPECT(cuGetProcAddress_v2("cuGetProcAddress", &function, 13000, 0, &status) == CUDA_SUCCESS);
    EXPECT(function == (void *)cuGetProcAddress_v2 && status == CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT(cuGetProcAddress_v2(NULL, &function, 13000, 0, &status) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuGetProcAddress_v2("cuInit", NULL, 13000, 0, &status) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuGetProcAddress_v2("cuLaunchKernel", &function, 13000, 0, NULL) == CUDA_SUCCESS && function != NULL);
}

static void no_driver_means_an_error_not_a_crash(void)
{
    if (vgpu_real_driver() != NULL) {
        printf("skip no_driver_means_an_error_not_a_crash: this machine has a CUDA driver\n");
        return;
    }
    void *function = NULL;
    EXPECT(cuGetProcAddress_v2("cuInit", &function, 13000, 0, NULL) == CUDA_SUCCESS);
    CUresult (*init)(unsigned int) = (CUresult(*)(unsigned int))function;
    EXPECT(init(0) == CUDA_ERROR_STUB_LIBRARY);
    int count = -1;
    EXPECT(cuDeviceGetCount(&count) == CUDA_ERROR_STUB_LIBRARY && count == -1);
    const void *table = (const void *)1;
    CUuuid id;
    memset(&id, 0x6b, sizeof id);
    EXPECT(cuGetExportTable(&table, &id) != CUDA_SUCCESS && table == NULL);
    EXPECT(vgpu_real_driver_problem() != NULL);
}

static void every_name_has_one_id(void)
{
    for (int id = 0; id < VGPU_ENTRY_POINT_COUNT; id++) {
        EXPECT(vgpu_entry_id(vgpu_entry_name(id)) == id);
    }
    EXPECT(vgpu_entry_id("cuNoSuchCall") == -1);
    for (size_t i = 0; i < vgpu_proc_entry_count; i++) {
        EXPECT(vgpu_proc_entries[i].id == vgpu_entry_id(vgpu_proc_entries[i].name));
    }
}

static void calls_are_counted_under_their_name(void)
{
    vgpu_counting = 1; /* as VGPU_LIBCUDA_REPORT makes it */
    int id = vgpu_entry_id("cuDeviceGetCount");
    unsigned long long before = vgpu_calls(id);
    int count;
    cuDeviceGetCount(&count);
    void *function = NULL;
    cuGetProcAddress_v2("cuDeviceGetCount", &function, 13000, 0, NULL);
    ((CUresult(*)(int *))function)(&count);
    EXPECT(vgpu_calls(id) == before + 2);
}

static void calls_are_timed_for_the_report_only(void)
{
    int counting = vgpu_counting;
    vgpu_counting = 1; /* as VGPU_LIBCUDA_REPORT makes it */
    int id = vgpu_entry_id("cuMemAlloc");
    unsigned long long before = vgpu_call_nanos(id);
    uint64_t started = vgpu_call_clock();
    EXPECT(started != 0);
    nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    unsigned long long direct_before = vgpu_direct_calls(id);
    vgpu_direct_calls_made = 2; /* as two direct calls the served one made would leave it */
    EXPECT(vgpu_served_result(id, started, CUDA_SUCCESS) == CUDA_SUCCESS);
    unsigned long long timed = vgpu_call_nanos(id);
    EXPECT(timed >= before + 1000000);
    EXPECT(vgpu_direct_calls(id) == direct_before + 2); /* credited to this entry point, and counted afresh after */
    EXPECT(vgpu_direct_calls_made == 0);
    vgpu_counting = 0; /* no report: nothing is timed, and the answer is the call's */
    EXPECT(vgpu_call_clock() == 0);
    EXPECT(vgpu_served_result(id, vgpu_call_clock(), CUDA_ERROR_INVALID_VALUE) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(vgpu_call_nanos(id) == timed);
    /* a call passed to the node's driver is timed the same way */
    vgpu_counting = 1;
    int passed = vgpu_entry_id("cuGraphAddKernelNode");
    unsigned long long passed_before = vgpu_call_nanos(passed);
    started = vgpu_call_clock();
    nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    EXPECT(vgpu_timed_result(passed, started, CUDA_ERROR_NOT_READY) == CUDA_ERROR_NOT_READY);
    EXPECT(vgpu_call_nanos(passed) >= passed_before + 1000000);
    /* the median of a call's times, which the first slow calls of a library do not move as they move the mean */
    vgpu_keep_call_times();
    int medianed = vgpu_entry_id("cuLaunchKernel");
    EXPECT(vgpu_median_call_nanos(medianed) == -1);
    for (int i = 0; i < 8; i++) { /* three first, slow calls of 20 ms, then five steady ones of 1 ms */
        vgpu_timed_result(medianed, vgpu_call_clock() - (i < 3 ? 20000000 : 1000000), CUDA_SUCCESS);
    }
    double median = vgpu_median_call_nanos(medianed);
    EXPECT(median >= 1000000 * 0.9 && median <= 1000000 * 1.2);
    EXPECT((double)vgpu_call_nanos(medianed) / 8 > 4 * median); /* the mean is not */
    vgpu_counting = counting;
}

static void refusals_say_why(void)
{
    const char *reason = NULL;
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuIpcOpenMemHandle"), &reason) == VGPU_REFUSE);
    EXPECT(reason != NULL && strstr(reason, "IPC") != NULL);
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuMemAllocManaged"), &reason) == VGPU_REFUSE);
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuMemAlloc"), &reason) == VGPU_SERVE);
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuGraphAddKernelNode"), &reason) == VGPU_PASS && reason[0] == '\0');
}

/* Libraries look up driver functions by dlsym, by today's names and by the older ones (cuBLAS asks for
   cuCtxPushCurrent, not cuCtxPushCurrent_v2): the built library must export both. */
static void older_names_are_exported_too(void)
{
    void *library = dlopen("build/libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    EXPECT(library != NULL);
    if (library == NULL) {
        return;
    }
    const char *names[] = {"cuCtxPushCurrent", "cuCtxPushCurrent_v2", "cuMemAlloc", "cuMemAlloc_v2",
                           "cuEventElapsedTime", "cuMemcpyHtoD_v2_ptds", "cuGetProcAddress_v2", "cuGetExportTable"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (dlsym(library, names[i]) == NULL) {
            fprintf(stderr, "not exported: %s\n", names[i]);
            failures++;
        }
    }
    EXPECT(dlsym(library, "vgpu_count") == NULL); /* nothing of vgpu's own leaves the library */
    dlclose(library);
}

static CUuuid table_id(const char *hex)
{
    CUuuid id;
    for (int i = 0; i < 16; i++) {
        unsigned int byte = 0;
        sscanf(hex + 2 * i, "%2x", &byte);
        id.bytes[i] = (char)byte;
    }
    return id;
}

/* A known answer of the integrity digest (inputs and digest published with ZLUDA's implementation of it), and the
   fixed answer for runtime versions ending in 0 or 1. */
static void the_integrity_digest_is_the_one_the_runtime_computes(void)
{
    struct vgpu_integrity_input input = {12020,          0x2B4A,         0x4D08,         0x2B78,
                                         0x7FF8C80717F0, 0x7FF8C825E4B0, 0x7FF8C7DD0AD0, 0x64A365EE};
    struct vgpu_integrity_device device = {table_id("6722cbcfc661f29274d6ed232a32131c"), 0, 4, 0};
    uint64_t digest[2] = {0, 0};
    vgpu_integrity_digest(&input, &device, 1, digest);
    EXPECT(digest[0] == UINT64_C(0xA7C34628F214707A) && digest[1] == UINT64_C(0xEAF1313342BFCD84));
    device.pci_bus = 5; /* another device: another digest */
    vgpu_integrity_digest(&input, &device, 1, digest);
    EXPECT(digest[0] != UINT64_C(0xA7C34628F214707A));
    input.runtime_version = 13000;
    vgpu_integrity_digest(&input, &device, 1, digest);
    EXPECT(digest[0] == UINT64_C(0x3341181c03cb675c) && digest[1] == UINT64_C(0x8ed383aa1f4cd1e8));
    input.runtime_version = 13001;
    vgpu_integrity_digest(&input, &device, 1, digest);
    EXPECT(digest[0] == UINT64_C(0x1841181c03cb675c));
}

typedef CUresult (*any_slot)(void);

static void known_tables_are_served_and_others_refused(void)
{
    const void *table = NULL;
    CUuuid runtime = table_id("6bd5fb6c5bf4e74a8987d93912fd9df9");
    EXPECT(vgpu_served_export_table(&table, &runtime) == CUDA_SUCCESS && table != NULL);
    if (table == NULL) {
        return;
    }
    const void *const *slots = table;
    EXPECT((uintptr_t)slots[0] == 13 * sizeof(void *)); /* the runtime reads a table's size from its slot 0 */
    /* a slot vgpu does not serve refuses, whatever the runtime passes */
    EXPECT(((any_slot)(uintptr_t)slots[1])() == CUDA_ERROR_NOT_SUPPORTED);
    const char *served[] = {"42d85a8123f6cb478298f6e78a3aecdc", "a094798c2e742e7493f20800200c0a66",
                            "c693336e1121df11a8c368f355d89593", "263e88607cd2614392f6bbd5006dfa7e",
                            "d4082055bde6704b8d34ba123c66e1f2"};
    for (size_t i = 0; i < sizeof served / sizeof served[0]; i++) {
        CUuuid id = table_id(served[i]);
        table = NULL;
        EXPECT(vgpu_served_export_table(&table, &id) == CUDA_SUCCESS && table != NULL);
    }
    /* the table that would let the runtime skip its start is answered as a driver without it answers */
    CUuuid shortcut = table_id("f8cff95121468b4eb9e2fb469e7c0dd9");
    EXPECT(vgpu_served_export_table(&table, &shortcut) == CUDA_ERROR_NOT_FOUND);
    CUuuid unknown = table_id("0123456789abcdef0123456789abcdef");
    EXPECT(vgpu_served_export_table(&table, &unknown) == CUDA_ERROR_NOT_SUPPORTED);

    /* the integrity check names the runtime's version: a runtime older than the CUDA 13 whose tables these are is
       refused, naming its version, rather than served slots that may mean other things to it */
    CUuuid integrity = table_id("d4082055bde6704b8d34ba123c66e1f2");
    EXPECT(vgpu_served_export_table(&table, &integrity) == CUDA_SUCCESS);
    CUresult (*check)(unsigned int, uint64_t, uint64_t *) =
        (CUresult(*)(unsigned int, uint64_t, uint64_t *))((const void *const *)table)[1];
    uint64_t digest[2] = {0, 0};
    EXPECT(check(12080, 1700000000, digest) == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(check(13000, 1700000000, digest) == CUDA_SUCCESS);

    /* the tools' callback hooks: memory for the runtime to read */
    CUuuid hooks = table_id("a094798c2e742e7493f20800200c0a66");
    EXPECT(vgpu_served_export_table(&table, &hooks) == CUDA_SUCCESS);
    void *area = NULL;
    size_t bytes = 0;
    ((void (*)(void **, size_t *))((const void *const *)table)[2])(&area, &bytes);
    EXPECT(area != NULL && bytes >= 1024);
}

typedef CUresult (*context_id_slot)(CUcontext, unsigned long long *);
typedef int (*module_kernels_slot)(CUcontext, CUmodule, void (*)(void *, CUfunction), void *, CUmodule, const void *);

/* What cuFFT's function given to slot 7 of its table does: stores the function where its first argument points. */
static void store_function(void *to, CUfunction function)
{
    *(CUfunction *)to = function;
}

/* Two tables of which little is known: their sizes are the driver's, and every slot but the tools' context's 4 (a
   context's id) and cuFFT's 7 (a module's kernels) refuses, naming itself; the id is the context's own, so it needs
   one. */
static void tables_known_by_size_refuse_every_slot_not_served(void)
{
    const void *table = NULL;
    CUuuid tools_context = table_id("21318c60971432488ca641ff7324c8f2");
    EXPECT(vgpu_served_export_table(&table, &tools_context) == CUDA_SUCCESS && table != NULL);
    if (table != NULL) {
        const void *const *slots = table;
        EXPECT((uintptr_t)slots[0] == 93 * sizeof(void *));
        EXPECT(((any_slot)(uintptr_t)slots[1])() == CUDA_ERROR_NOT_SUPPORTED);
        EXPECT(((any_slot)(uintptr_t)slots[92])() == CUDA_ERROR_NOT_SUPPORTED);
        unsigned long long id = 0;
        EXPECT(((context_id_slot)(uintptr_t)slots[4])(NULL, &id) == CUDA_ERROR_INVALID_CONTEXT && id == 0);
    }
    table = NULL;
    CUuuid fft = table_id("6e163fbeb958444d835ce182aff1991e");
    EXPECT(vgpu_served_export_table(&table, &fft) == CUDA_SUCCESS && table != NULL);
    if (table != NULL) {
        const void *const *slots = table;
        EXPECT((uintptr_t)slots[0] == 99 * sizeof(void *));
        EXPECT(((any_slot)(uintptr_t)slots[6])() == CUDA_ERROR_NOT_SUPPORTED);
        EXPECT(((any_slot)(uintptr_t)slots[8])() == CUDA_ERROR_NOT_SUPPORTED);
        EXPECT(((any_slot)(uintptr_t)slots[98])() == CUDA_ERROR_NOT_SUPPORTED);
        /* slot 7 hands a module's kernels to the caller's function: none for a call of another shape (the module not
           given twice) or for what is no module of a vGPU, and the function is not called */
        CUfunction received = NULL;
        struct vgpu_handle not_a_module = {0};
        EXPECT(((module_kernels_slot)(uintptr_t)slots[7])(NULL, (CUmodule)&not_a_module, store_function, &received,
                                                          NULL, NULL) == 0);
        EXPECT(((module_kernels_slot)(uintptr_t)slots[7])(NULL, (CUmodule)&not_a_module, store_function, &received,
                                                          (CUmodule)&not_a_module, NULL) == 0);
        EXPECT(received == NULL);
    }
}

/* Answers as the driver gives them without a current context: freeing 0 succeeds, the rest need a context. */
static void context_queries_answer_as_the_driver_without_a_context(void)
{
    int least = 7;
    int greatest = 7;
    size_t value = 7;
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    EXPECT(vgpu_served_cuMemFree(0) == CUDA_SUCCESS);
    EXPECT(vgpu_served_cuCtxGetStreamPriorityRange(&least, &greatest) == CUDA_ERROR_INVALID_CONTEXT);
    EXPECT(least == 7 && greatest == 7);
    EXPECT(vgpu_served_cuCtxGetLimit(&value, CU_LIMIT_CIG_ENABLED) == CUDA_ERROR_INVALID_CONTEXT && value == 7);
    EXPECT(vgpu_served_cuCtxGetLimit(NULL, CU_LIMIT_STACK_SIZE) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(vgpu_served_cuCtxSetLimit(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0) == CUDA_ERROR_UNSUPPORTED_LIMIT);
    EXPECT(vgpu_served_cuStreamIsCapturing(NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(vgpu_served_cuStreamIsCapturing(NULL, &status) != CUDA_SUCCESS);
    unsigned int version = 0;
    EXPECT(vgpu_served_cuCtxGetApiVersion(NULL, &version) == CUDA_ERROR_INVALID_CONTEXT && version == 0);
}

typedef CUresult (*value_put)(CUcontext, void *, void *, void (*)(CUcontext, void *, void *));
typedef CUresult (*value_delete)(CUcontext, void *);
typedef CUresult (*value_get)(void **, CUcontext, void *);

/* The runtime keeps its state of a context under its own key: put, get and delete, by context and key. */
static void context_local_storage_keeps_values_by_context_and_key(void)
{
    const void *table = NULL;
    CUuuid storage = table_id("c693336e1121df11a8c368f355d89593");
    EXPECT(vgpu_served_export_table(&table, &storage) == CUDA_SUCCESS);
    const void *const *slots = table;
    value_put put = (value_put)(uintptr_t)slots[0];
    value_delete delete = (value_delete)(uintptr_t)slots[1];
    value_get get = (value_get)(uintptr_t)slots[2];
    struct vgpu_handle first = {VGPU_HANDLE_MAGIC, VGPU_CONTEXT, NULL, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    struct vgpu_handle second = first;
    int key = 0;
    int value = 0;
    void *found = (void *)1;
    EXPECT(get(&found, (CUcontext)&first, &key) != CUDA_SUCCESS && found == NULL);
    EXPECT(put((CUcontext)&first, &key, &value, NULL) == CUDA_SUCCESS);
    EXPECT(get(&found, (CUcontext)&first, &key) == CUDA_SUCCESS && found == &value);
    EXPECT(get(&found, (CUcontext)&second, &key) != CUDA_SUCCESS);
    EXPECT(delete ((CUcontext)&first, &key) == CUDA_SUCCESS);
    EXPECT(get(&found, (CUcontext)&first, &key) != CUDA_SUCCESS);
    /* no context current and none named: refused, not followed */
    EXPECT(put(NULL, &key, &value, NULL) == CUDA_ERROR_INVALID_CONTEXT);
}

/* An H100/H200 multiprocessor, as its driver describes it, and a kernel of `registers` registers per thread. */
static struct vgpu_occupancy hopper_kernel(int registers, int static_shared)
{
    return (struct vgpu_occupancy){.registers = registers,
                                   .static_shared = static_shared,
                                   .max_threads = 1024,
                                   .max_dynamic_shared = 48 * 1024 - static_shared,
                                   .warp_size = 32,
                                   .threads_per_multiprocessor = 2048,
                                   .blocks_per_multiprocessor = 32,
                                   .registers_per_multiprocessor = 64 * 1024,
                                   .registers_per_block = 64 * 1024,
                                   .shared_per_multiprocessor = 228 * 1024,
                                   .reserved_shared_per_block = 1024,
                                   .multiprocessors = 132};
}

static size_t quarter_kibibyte_per_thread(int block_size)
{
    return (size_t)block_size * 256;
}

/* The figures NVIDIA's occupancy calculator gives for compute capability 9.0. */
static void occupancy_is_limited_by_threads_registers_and_shared_memory(void)
{
    struct vgpu_occupancy small = hopper_kernel(32, 0);
    EXPECT(vgpu_resident_blocks(&small, 256, 0) == 8);  /* threads: 2048 / 256 */
    EXPECT(vgpu_resident_blocks(&small, 32, 0) == 32);  /* blocks: at most 32 */
    EXPECT(vgpu_resident_blocks(&small, 1025, 0) == 0); /* larger than the kernel's largest block */
    struct vgpu_occupancy heavy = hopper_kernel(64, 0);
    EXPECT(vgpu_resident_blocks(&heavy, 256, 0) == 4); /* registers: 32 warps of 2048 */
    struct vgpu_occupancy wide = hopper_kernel(255, 0);
    EXPECT(vgpu_resident_blocks(&wide, 1024, 0) == 0); /* 255 x 1024 registers do not fit a block */
    struct vgpu_occupancy tiles = hopper_kernel(32, 0);
    tiles.max_dynamic_shared = 227 * 1024;
    EXPECT(vgpu_resident_blocks(&tiles, 256, 64 * 1024) == 3); /* shared memory: 228 KiB / (64 + 1) KiB */
    EXPECT(vgpu_resident_blocks(&small, 256, 64 * 1024) == 0); /* above the kernel's dynamic shared memory */

    int block = 0;
    int grid = 0;
    vgpu_best_block_size(&small, NULL, 0, 0, &block, &grid);
    EXPECT(block == 1024 && grid == 2 * 132); /* every size from 64 up keeps 2048 threads: the largest */
    vgpu_best_block_size(&small, NULL, 0, 200, &block, &grid);
    EXPECT(block == 128 && grid == 16 * 132); /* at most 200 threads: 128 x 16 beats 192 x 10 and 200 x 9 */
    vgpu_best_block_size(&tiles, quarter_kibibyte_per_thread, 0, 0, &block, &grid);
    EXPECT(block > 0 && vgpu_resident_blocks(&tiles, block, quarter_kibibyte_per_thread(block)) * block >= 768);
}

/* A launch of no kernel with one attribute: what the attribute alone makes of it. */
static CUresult launch_with(CUlaunchAttribute attribute)
{
    CUlaunchConfig config = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                             .blockDimZ = 1, .attrs = &attribute, .numAttrs = 1};
    return cuLaunchKernelEx(&config, NULL, NULL, NULL);
}

static CUlaunchAttribute cluster(unsigned int x)
{
    CUlaunchAttribute attribute = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
    attribute.value.clusterDim.x = x;
    attribute.value.clusterDim.y = 1;
    attribute.value.clusterDim.z = 1;
    return attribute;
}

/* Bad calls get CUDA's error codes, and launch attributes a vGPU cannot mean are refused by name, before any
   kernel or session is looked at. */
static void launches_and_kernel_queries_refuse_bad_calls(void)
{
    vgpu_serving = 1;
    EXPECT(cuLaunchKernelEx(NULL, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    CUlaunchAttribute cooperative = {.id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE};
    cooperative.value.cooperative = 1;
    EXPECT(launch_with(cooperative) == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(launch_with(cluster(2)) == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(launch_with(cluster(0)) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(launch_with((CUlaunchAttribute){.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT}) == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(launch_with((CUlaunchAttribute){.id = (CUlaunchAttributeID)99}) == CUDA_ERROR_INVALID_VALUE);
    CUlaunchConfig no_attributes = {.numAttrs = 1};
    EXPECT(cuLaunchKernelEx(&no_attributes, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    /* what a vGPU's launch already is, or may ignore, is served: the kernel is looked at next */
    CUlaunchAttribute served[] = {{.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION},
                                  {.id = CU_LAUNCH_ATTRIBUTE_PRIORITY}, cluster(1), {.id = CU_LAUNCH_ATTRIBUTE_IGNORE}};
    served[0].value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1,
                             .blockDimZ = 1, .attrs = served, .numAttrs = 4};
    EXPECT(cuLaunchKernelEx(&config, NULL, NULL, NULL) == CUDA_ERROR_INVALID_HANDLE);

    struct vgpu_handle not_a_function = {0};
    int value = 0;
    EXPECT(cuFuncGetAttribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)&not_a_function) ==
           CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, (CUfunction)&not_a_function) ==
           CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuFuncSetAttribute(NULL, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 0) == CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuKernelGetAttribute(NULL, CU_FUNC_ATTRIBUTE_NUM_REGS, NULL, 0) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuOccupancyMaxActiveBlocksPerMultiprocessor(NULL, NULL, 256, 0) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&value, NULL, 256, 0, 2) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuOccupancyMaxActiveBlocksPerMultiprocessor(&value, NULL, 256, 0) == CUDA_ERROR_INVALID_HANDLE);
    EXPECT(cuOccupancyMaxPotentialBlockSize(NULL, &value, NULL, NULL, 0, 0) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuOccupancyMaxPotentialBlockSize(&value, &value, NULL, NULL, 0, -1) == CUDA_ERROR_INVALID_VALUE);
    vgpu_serving = 0;
}

/* A local worker's stand-in on the other end of a socket pair, as the worker answers: nothing to an asynchronous
   request, OK to a synchronous one (with 49152: the answer to a question of a kernel's dynamic shared memory); it
   counts what came and stops after answering CTX_SYNCHRONIZE. */
struct fake_worker {
    int fd;
    unsigned int async_requests;
    unsigned int launches;
    unsigned int window_questions;        /* DEVICE_GET_ATTRIBUTE, which the window asks */
    unsigned int async_before_question;   /* asynchronous requests before the first of them */
    unsigned int shared_memory_questions; /* FUNC_GET_ATTRIBUTE */
    unsigned int async_copies_to_device;  /* MEMCPY_HTOD with FLAG_ASYNC, its last chunk (no FLAG_MORE) */
    uint8_t last_copy[256];               /* the bytes of the last of them (up to 256) */
    uint8_t last_launch_tail[4];          /* the last 4 bytes of the last LAUNCH_KERNEL: its last parameter's */
};

static int read_exactly(int fd, uint8_t *bytes, size_t length)
{
    while (length > 0) {
        ssize_t got = read(fd, bytes, length);
        if (got <= 0) {
            return -1;
        }
        bytes += got;
        length -= (size_t)got;
    }
    return 0;
}

static void *fake_worker_serve(void *argument)
{
    struct fake_worker *worker = argument;
    for (;;) {
        uint8_t header[VGPU_WIRE_HEADER_BYTES];
        if (read_exactly(worker->fd, header, sizeof header) != 0) {
            return NULL;
        }
        uint32_t length = (uint32_t)header[0] << 24 | (uint32_t)header[1] << 16 | (uint32_t)header[2] << 8 | header[3];
        int opcode = header[4] << 8 | header[5];
        int flags = header[6] << 8 | header[7];
        uint8_t body[4096];
        size_t body_length = length - (VGPU_WIRE_HEADER_BYTES - 4);
        if (body_length > sizeof body || read_exactly(worker->fd, body, body_length) != 0) {
            return NULL;
        }
        if (flags & VGPU_WIRE_FLAG_ASYNC) {
            worker->async_requests++;
            worker->launches += opcode == VGPU_OP_LAUNCH_KERNEL;
            if (opcode == VGPU_OP_LAUNCH_KERNEL && body_length >= 4) {
                memcpy(worker->last_launch_tail, body + body_length - 4, 4);
            }
            if (opcode == VGPU_OP_MEMCPY_HTOD && !(flags & VGPU_WIRE_FLAG_MORE) && body_length >= 12) {
                worker->async_copies_to_device++;
                size_t room = sizeof worker->last_copy;
                size_t bytes = body_length - 12 < room ? body_length - 12 : room;
                memcpy(worker->last_copy, body + 12, bytes);
            }
            continue;
        }
        if (opcode == VGPU_OP_DEVICE_GET_ATTRIBUTE && worker->window_questions++ == 0) {
            worker->async_before_question = worker->async_requests;
        }
        worker->shared_memory_questions += opcode == VGPU_OP_FUNC_GET_ATTRIBUTE;
        /* OK, the request's id, and 49152 */
        uint8_t ok[] = {0, 0, 0, 12, 0, VGPU_OP_OK, 0, 0, header[8], header[9], header[10], header[11], 0, 0, 0xc0, 0};
        if (write(worker->fd, ok, sizeof ok) != (ssize_t)sizeof ok || opcode == VGPU_OP_CTX_SYNCHRONIZE) {
            return NULL;
        }
    }
}

/* A vGPU whose session is a socket pair with a fake worker on its other end, current to the calling thread. */
struct fake_session {
    int ends[2];
    pthread_t thread;
    struct fake_worker worker;
    struct vgpu_handle context;
};

/* Opens device's session with a fake worker (device's fd is set here) and makes its context current. */
static void fake_session_start(struct fake_session *session, struct vgpu_device *device)
{
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, session->ends) == 0);
    struct timeval patience = {10, 0};
    setsockopt(session->ends[0], SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
    device->fd = session->ends[0];
    device->next_request_id = 1;
    pthread_mutex_init(&device->lock, NULL);
    session->worker = (struct fake_worker){.fd = session->ends[1]};
    EXPECT(pthread_create(&session->thread, NULL, fake_worker_serve, &session->worker) == 0);
    session->context = (struct vgpu_handle){VGPU_HANDLE_MAGIC, VGPU_CONTEXT, device, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    vgpu_serving = 1;
    vgpu_set_current(&session->context);
}

/* Ends the session with cuCtxSynchronize, which the fake worker answers last, and waits for it. */
static void fake_session_stop(struct fake_session *session, struct vgpu_device *device)
{
    EXPECT(cuCtxSynchronize() == CUDA_SUCCESS);
    pthread_join(session->thread, NULL);
    vgpu_set_current(NULL);
    vgpu_serving = 0;
    close(session->ends[0]);
    close(session->ends[1]);
    pthread_mutex_destroy(&device->lock);
}

/* Launches are sent with FLAG_ASYNC and wait for no answer (the stand-in gives none, and the session's socket gives
   up on a read after 10 s), but for one question when VGPU_ASYNC_WINDOW of them are unanswered; what the driver
   refuses at the call is refused without a request, the kernel's dynamic shared memory asked once. */
static void launches_wait_for_no_answer_within_the_window(void)
{
    struct vgpu_device device = {.max_threads_per_block = 1024};
    struct fake_session session;
    fake_session_start(&session, &device);
    struct fake_worker *worker = &session.worker;
    struct vgpu_handle function = {VGPU_HANDLE_MAGIC, VGPU_FUNCTION, &device, 7, 0, NULL, -1, 0, 0, {0}, NULL};
    CUfunction f = (CUfunction)&function;

    EXPECT(cuLaunchKernel(f, 0, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 0, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel(f, 1u << 31, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 49153, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 49152, NULL, NULL, NULL) == CUDA_SUCCESS);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 65536, NULL, NULL, NULL) == CUDA_ERROR_INVALID_VALUE);
    for (unsigned int i = 1; i < VGPU_ASYNC_WINDOW + 10; i++) {
        EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL) == CUDA_SUCCESS);
    }
    fake_session_stop(&session, &device);
    EXPECT(worker->launches == VGPU_ASYNC_WINDOW + 10 && worker->async_requests == worker->launches);
    EXPECT(worker->window_questions == 1 && worker->async_before_question == VGPU_ASYNC_WINDOW);
    EXPECT(worker->shared_memory_questions == 1);
    EXPECT(device.unanswered == 0);
}

static void count_run(void *runs)
{
    ++*(int *)runs;
}

static void CUDA_CB count_callback(CUstream stream, CUresult status, void *runs)
{
    (void)stream;
    (void)status;
    ++*(int *)runs;
}

static void *end_capture_on_another_thread(void *stream)
{
    CUgraph graph = NULL;
    return (void *)(intptr_t)cuStreamEndCapture((CUstream)stream, &graph);
}

/* A stream's capture records its launches, memsets and host functions and sends nothing; each launch of the graph sends
   them on the launch's stream, a kernel's parameters with their values at the capture. A call the capture does not
   record invalidates it, and it then ends with no graph. What CUDA refuses is refused with its codes. */
static void captures_record_work_that_each_graph_launch_sends(void)
{
    struct vgpu_allocation allocation = {0x100000000000, 4096, 1};
    struct vgpu_device device = {
        .max_threads_per_block = 1024, .allocations = &allocation, .allocation_count = 1, .allocation_capacity = 1};
    struct fake_session session;
    fake_session_start(&session, &device);
    struct fake_worker *worker = &session.worker;
    int sizes[] = {4};
    struct vgpu_handle function = {VGPU_HANDLE_MAGIC, VGPU_FUNCTION, &device, 7, 1, sizes, -1, 0, 0, {0}, NULL};
    struct vgpu_handle stream_handle = {VGPU_HANDLE_MAGIC, VGPU_STREAM, &device, 3, 0, NULL, -1, 0, 0, {0}, NULL};
    CUstream stream = (CUstream)&stream_handle;
    CUfunction f = (CUfunction)&function;
    uint32_t value = 7;
    void *parameters[] = {&value};
    int runs = 0;

    EXPECT(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(cuStreamBeginCapture(stream, (CUstreamCaptureMode)9) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_ERROR_ILLEGAL_STATE);
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t id = 0;
    CUgraph recording = NULL;
    EXPECT(cuStreamGetCaptureInfo(stream, &status, &id, &recording, NULL, NULL, NULL) == CUDA_SUCCESS);
    EXPECT(status == CU_STREAM_CAPTURE_STATUS_ACTIVE && id != 0 && recording != NULL);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL) == CUDA_SUCCESS);
    value = 9;
    EXPECT(cuMemsetD32Async(0x1000, 5, 4, stream) == CUDA_SUCCESS);
    EXPECT(cuLaunchHostFunc(stream, count_run, &runs) == CUDA_SUCCESS);
    EXPECT(worker->async_requests == 0 && runs == 0);
    pthread_t other;
    void *answer = NULL;
    EXPECT(pthread_create(&other, NULL, end_capture_on_another_thread, stream) == 0);
    EXPECT(pthread_join(other, &answer) == 0);
    /* a global capture ends on the thread that began it */
    EXPECT((CUresult)(intptr_t)answer == CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD);
    CUgraph graph = NULL;
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS && graph == recording);
    size_t nodes = 0;
    EXPECT(cuGraphGetNodes(graph, NULL, &nodes) == CUDA_SUCCESS && nodes == 3);
    CUgraphNode handed[3];
    EXPECT(cuGraphGetNodes(graph, handed, &nodes) == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE);
    CUgraphExec exec = NULL;
    EXPECT(cuGraphInstantiateWithFlags(&exec, graph, CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH) ==
           CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
    EXPECT(cuGraphDestroy(graph) == CUDA_SUCCESS); /* the instantiated graph keeps its own copy */
    EXPECT(cuGraphLaunch(exec, stream) == CUDA_SUCCESS);
    EXPECT(cuGraphLaunch(exec, NULL) == CUDA_SUCCESS);
    EXPECT(cuGraphLaunch((CUgraphExec)&function, stream) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuStreamSynchronize(NULL) == CUDA_SUCCESS); /* answered after the worker read every request before it */
    EXPECT(worker->launches == 2 && worker->async_requests == 4 && runs == 2);
    uint32_t captured = 0;
    memcpy(&captured, worker->last_launch_tail, sizeof captured);
    EXPECT(captured == 7);
    EXPECT(cuGraphExecDestroy(exec) == CUDA_SUCCESS);

    /* a captured copy from the program's own memory reads it when the graph runs, as a copy node does */
    uint8_t pageable[64] = {1};
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    EXPECT(cuMemcpyHtoDAsync(0x100000000000, pageable, sizeof pageable, stream) == CUDA_SUCCESS);
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS);
    EXPECT(cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS);
    pageable[0] = 42;
    EXPECT(cuGraphLaunch(exec, stream) == CUDA_SUCCESS);
    EXPECT(cuStreamSynchronize(NULL) == CUDA_SUCCESS);
    EXPECT(worker->async_copies_to_device == 1 && worker->last_copy[0] == 42);
    EXPECT(cuGraphExecDestroy(exec) == CUDA_SUCCESS && cuGraphDestroy(graph) == CUDA_SUCCESS);

    /* a synchronization inside a capture: refused, and the capture ends with no graph; a callback is not called */
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_RELAXED) == CUDA_SUCCESS);
    EXPECT(cuStreamSynchronize(stream) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(cuStreamAddCallback(stream, count_callback, &runs, 0) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    EXPECT(runs == 2);
    EXPECT(cuStreamIsCapturing(stream, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, stream, parameters, NULL) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    graph = (CUgraph)&function;
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && graph == NULL);
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_ERROR_ILLEGAL_STATE);
    EXPECT(worker->launches == 2);

    /* an event recorded on a captured stream is not recorded in its graph: the capture is invalidated */
    struct vgpu_handle event_handle = {VGPU_HANDLE_MAGIC, VGPU_EVENT, &device, 4, 0, NULL, -1, 0, 0, {0}, NULL};
    CUevent event = (CUevent)&event_handle;
    EXPECT(cuEventRecordWithFlags(event, stream, CU_EVENT_RECORD_EXTERNAL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuEventRecordWithFlags(event, stream, 7) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuEventRecordWithFlags(event, stream, CU_EVENT_RECORD_DEFAULT) == CUDA_SUCCESS);
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    EXPECT(cuEventRecordWithFlags(event, stream, CU_EVENT_RECORD_EXTERNAL) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && graph == NULL);

    /* a copy between two vGPUs is done at its call, never recorded: refused in a capture, which it invalidates */
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    EXPECT(cuMemcpyPeerAsync(0, NULL, 0, NULL, 0, stream) == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED && graph == NULL);

    /* a fork and a join: a second stream that waits for an event recorded in the capture captures into it, and the
       capture ends on the stream it began on, the second stream's capture with it; nothing is sent */
    struct vgpu_handle second_handle = {VGPU_HANDLE_MAGIC, VGPU_STREAM, &device, 5, 0, NULL, -1, 0, 0, {0}, NULL};
    struct vgpu_handle join_handle = {VGPU_HANDLE_MAGIC, VGPU_EVENT, &device, 6, 0, NULL, -1, 0, 0, {0}, NULL};
    CUstream second = (CUstream)&second_handle;
    CUevent join = (CUevent)&join_handle;
    EXPECT(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    EXPECT(cuEventRecord(event, stream) == CUDA_SUCCESS);
    EXPECT(cuStreamWaitEvent(second, event, 0) == CUDA_SUCCESS);
    EXPECT(cuStreamIsCapturing(second, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE);
    EXPECT(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, second, parameters, NULL) == CUDA_SUCCESS);
    EXPECT(cuEventRecord(join, second) == CUDA_SUCCESS);
    EXPECT(cuStreamWaitEvent(stream, join, 0) == CUDA_SUCCESS);
    EXPECT(cuStreamWaitEvent(NULL, join, 0) == CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
    EXPECT(cuMemsetD32Async(0x100000000000, 1, 4, stream) == CUDA_SUCCESS);
    EXPECT(cuStreamEndCapture(second, &graph) == CUDA_ERROR_STREAM_CAPTURE_UNMATCHED);
    EXPECT(cuStreamEndCapture(stream, &graph) == CUDA_SUCCESS && graph != NULL);
    EXPECT(cuStreamIsCapturing(second, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE);
    EXPECT(cuGraphGetNodes(graph, NULL, &nodes) == CUDA_SUCCESS && nodes == 2);
    EXPECT(atomic_load(&join_handle.capture) == NULL && atomic_load(&event_handle.capture) == NULL);
    EXPECT(cuGraphDestroy(graph) == CUDA_SUCCESS);
    EXPECT(cuStreamSynchronize(NULL) == CUDA_SUCCESS);
    EXPECT(worker->launches == 2 && worker->async_requests == 5);

    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    EXPECT(cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS && mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    EXPECT(cuThreadExchangeStreamCaptureMode(&mode) == CUDA_SUCCESS && mode == CU_STREAM_CAPTURE_MODE_RELAXED);
    fake_session_stop(&session, &device);
}

/* 2-D, 3-D and either-way copies, pitched allocations, 2-D memsets and registered memory refuse bad calls with CUDA's
   codes before any session is asked: a null pointer, a row wider than its pitch, a CUDA array, a pitched element size
   the driver does not take, memory of no vGPU, a reserved field set, I/O memory, registering or unregistering twice. */
static void copies_memsets_and_registrations_refuse_bad_calls(void)
{
    vgpu_serving = 1;
    uint8_t host[64] = {0};
    EXPECT(cuMemcpy(0, (CUdeviceptr)(uintptr_t)host, 4) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyAsync((CUdeviceptr)(uintptr_t)host, 0, 4, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpy2D(NULL) == CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY2D rows = {.srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = host, .srcPitch = 8,
                          .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = host + 32, .dstPitch = 8,
                          .WidthInBytes = 16, .Height = 2};
    EXPECT(cuMemcpy2D(&rows) == CUDA_ERROR_INVALID_VALUE); /* wider than its pitch */
    rows.srcHost = NULL;
    EXPECT(cuMemcpy2D(&rows) == CUDA_ERROR_INVALID_VALUE);
    rows.srcMemoryType = CU_MEMORYTYPE_ARRAY;
    EXPECT(cuMemcpy2D(&rows) == CUDA_ERROR_NOT_SUPPORTED);
    rows.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    rows.srcDevice = 0x10; /* in no vGPU's window */
    rows.srcPitch = 16;
    rows.dstPitch = 16;
    EXPECT(cuMemcpy2D(&rows) == CUDA_ERROR_INVALID_VALUE);
    CUDA_MEMCPY3D volume = {.reserved0 = host, .WidthInBytes = 1, .Height = 1, .Depth = 1};
    EXPECT(cuMemcpy3D(&volume) == CUDA_ERROR_INVALID_VALUE);
    CUdeviceptr pitched = 0;
    size_t pitch = 0;
    EXPECT(cuMemAllocPitch(&pitched, &pitch, 100, 10, 3) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemAllocPitch(&pitched, &pitch, 0, 10, 4) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemsetD2D8(0x10, 64, 1, 16, 2) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemHostRegister(host, sizeof host, 0x100) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemHostRegister(host, sizeof host, CU_MEMHOSTREGISTER_IOMEMORY) == CUDA_ERROR_NOT_SUPPORTED);
    EXPECT(cuMemHostRegister(host, sizeof host, 0) == CUDA_SUCCESS);
    EXPECT(cuMemHostRegister(host + 8, 8, 0) == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    EXPECT(cuMemFreeHost(host) == CUDA_ERROR_INVALID_VALUE); /* registered, not given */
    EXPECT(cuMemHostUnregister(host + 8) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    EXPECT(cuMemHostUnregister(host) == CUDA_SUCCESS);
    EXPECT(cuMemHostUnregister(host) == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
    vgpu_serving = 0;
}

/* An asynchronous copy of the program's own (pageable) memory to the device returns once the bytes are in its request,
   as CUDA's returns once they are staged: sent with FLAG_ASYNC, answered by nothing (the stand-in gives nothing), the
   program's memory reusable at once; one to memory of no allocation is refused at the call, with no request. */
static void async_copies_of_pageable_memory_wait_for_no_answer(void)
{
    struct vgpu_allocation allocation = {0x100000000000, 4096, 1};
    struct vgpu_device device = {.allocations = &allocation, .allocation_count = 1, .allocation_capacity = 1};
    struct fake_session session;
    fake_session_start(&session, &device);
    struct fake_worker *worker = &session.worker;

    uint8_t pageable[256];
    memset(pageable, 0x5a, sizeof pageable);
    EXPECT(cuMemcpyHtoDAsync(0x100000000000 + 512, pageable, sizeof pageable, NULL) == CUDA_SUCCESS);
    memset(pageable, 0, sizeof pageable); /* the program may reuse its memory at once */
    EXPECT(cuMemcpyHtoDAsync(0x100000000000 + 4000, pageable, sizeof pageable, NULL) == CUDA_ERROR_INVALID_VALUE);
    EXPECT(cuMemcpyHtoDAsync(0x200000000000, pageable, sizeof pageable, NULL) == CUDA_ERROR_INVALID_VALUE);
    fake_session_stop(&session, &device);
    EXPECT(worker->async_copies_to_device == 1 && worker->async_requests == 1);
    EXPECT(worker->last_copy[0] == 0x5a && worker->last_copy[255] == 0x5a);
    EXPECT(device.unanswered == 0);
}

/* A launcher's stand-in that shares host memory as the local worker does: HOST_REGION_CREATE makes a file of a header
   page ("VGHR", the nonce) and the bytes (mode 600 unless told, region id 7), or is refused with 801 when told; every
   other request is answered OK. It keeps the opcodes, flags and bodies it got, and stops at the end of the stream. */
struct region_launcher {
    int fd;
    int refuse;          /* answer HOST_REGION_CREATE with CUDA_ERROR_NOT_SUPPORTED */
    mode_t mode;         /* of the file it makes */
    char path[64];
    int opcodes[16];
    int flags[16];
    uint8_t bodies[16][64];
    int count;
};

static void put_be(uint8_t *at, uint64_t value, int bytes)
{
    for (int i = 0; i < bytes; i++) {
        at[i] = (uint8_t)(value >> (8 * (bytes - 1 - i)));
    }
}

static uint64_t get_be(const uint8_t *at, int bytes)
{
    uint64_t value = 0;
    for (int i = 0; i < bytes; i++) {
        value = value << 8 | at[i];
    }
    return value;
}

static void *region_launcher_serve(void *argument)
{
    struct region_launcher *launcher = argument;
    for (;;) {
        uint8_t header[VGPU_WIRE_HEADER_BYTES];
        if (read_exactly(launcher->fd, header, sizeof header) != 0) {
            return NULL;
        }
        size_t body_length = (size_t)get_be(header, 4) - (VGPU_WIRE_HEADER_BYTES - 4);
        uint8_t body[1 << 16];
        if (body_length > sizeof body || read_exactly(launcher->fd, body, body_length) != 0) {
            return NULL;
        }
        int opcode = (int)get_be(header + 4, 2);
        if (launcher->count < 16) {
            launcher->opcodes[launcher->count] = opcode;
            launcher->flags[launcher->count] = (int)get_be(header + 6, 2);
            memcpy(launcher->bodies[launcher->count], body, body_length < 64 ? body_length : 64);
            launcher->count++;
        }
        static uint8_t reply[VGPU_WIRE_HEADER_BYTES + 8 + 16384];
        memset(reply, 0, sizeof reply);
        size_t length = VGPU_WIRE_HEADER_BYTES;
        int reply_opcode = VGPU_OP_OK;
        if (opcode == VGPU_OP_MEMCPY_DTOH) { /* one DATA frame of zeros, at offset 0 */
            reply_opcode = VGPU_OP_DATA;
            uint64_t bytes = get_be(body + 12, 8);
            length += 8 + (bytes < 16384 ? bytes : 16384);
        } else if (opcode == VGPU_OP_HOST_REGION_CREATE && launcher->refuse) {
            reply_opcode = VGPU_OP_ERROR;
            put_be(reply + length, CUDA_ERROR_NOT_SUPPORTED, 4); /* no name, no detail */
            length += 12;
        } else if (opcode == VGPU_OP_HOST_REGION_CREATE) {
            uint64_t pages = (get_be(body, 8) + 4095) / 4096 * 4096;
            strcpy(launcher->path, "/tmp/vgpu-unit-region-XXXXXX");
            int file = mkstemp(launcher->path);
            uint32_t magic = 0x56474852u;
            uint64_t nonce = 0x1234abcd5678ef90ull;
            if (file < 0) {
                EXPECT(file >= 0);
                return NULL;
            }
            EXPECT(fchmod(file, launcher->mode) == 0 && ftruncate(file, (off_t)(4096 + pages)) == 0);
            EXPECT(pwrite(file, &magic, 4, 0) == 4 && pwrite(file, &nonce, 8, 8) == 8);
            close(file);
            put_be(reply + length, 7, 4);
            put_be(reply + length + 4, strlen(launcher->path), 4);
            memcpy(reply + length + 8, launcher->path, strlen(launcher->path));
            put_be(reply + length + 8 + strlen(launcher->path), nonce, 8);
            length += 16 + strlen(launcher->path);
        }
        put_be(reply, length - 4, 4);
        put_be(reply + 4, (uint64_t)reply_opcode, 2);
        memcpy(reply + 8, header + 8, 4); /* the request's id */
        if (write(launcher->fd, reply, length) != (ssize_t)length) {
            return NULL;
        }
    }
}

/* A worker's stand-in that answers every request with an ERROR frame of one number. */
struct refusing_worker {
    int fd;
    uint32_t code;
};

static void *refusing_worker_serve(void *argument)
{
    struct refusing_worker *worker = argument;
    uint8_t header[VGPU_WIRE_HEADER_BYTES];
    uint8_t body[4096];
    while (read_exactly(worker->fd, header, sizeof header) == 0) {
        size_t body_length = (size_t)get_be(header, 4) - (VGPU_WIRE_HEADER_BYTES - 4);
        if (body_length > sizeof body || read_exactly(worker->fd, body, body_length) != 0) {
            return NULL;
        }
        /* ERROR: the number, an empty name and an empty detail */
        uint8_t error[VGPU_WIRE_HEADER_BYTES + 12] = {0};
        put_be(error, sizeof error - 4, 4);
        put_be(error + 4, VGPU_OP_ERROR, 2);
        memcpy(error + 8, header + 8, 4);
        put_be(error + VGPU_WIRE_HEADER_BYTES, worker->code, 4);
        if (write(worker->fd, error, sizeof error) != (ssize_t)sizeof error) {
            return NULL;
        }
    }
    return NULL;
}

/* A CUDA error from the worker reaches the program as it is; vgpu's own (ErrorCode, above 10000) as the CUDA error
   nearest in meaning, one a program and the CUDA runtime can name. */
static void vgpu_errors_reach_the_program_as_cuda_errors(void)
{
    const struct {
        uint32_t sent;
        CUresult answered;
    } cases[] = {
        {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS},
        {10002, CUDA_ERROR_OUT_OF_MEMORY},   /* VGPU_WINDOW_FULL */
        {10003, CUDA_ERROR_NO_BINARY_FOR_GPU}, /* VGPU_NO_KERNEL_TWIN */
        {10004, CUDA_ERROR_NO_DEVICE},        /* VGPU_BACKEND_UNAVAILABLE */
        {10008, CUDA_ERROR_LAUNCH_FAILED},    /* VGPU_WORKER_LOST */
        {10099, CUDA_ERROR_UNKNOWN},          /* a newer worker's */
    };
    vgpu_serving = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int ends[2];
        EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
        struct vgpu_device device = {.fd = ends[0], .next_request_id = 1, .max_threads_per_block = 1024};
        pthread_mutex_init(&device.lock, NULL);
        struct refusing_worker worker = {ends[1], cases[i].sent};
        pthread_t thread;
        EXPECT(pthread_create(&thread, NULL, refusing_worker_serve, &worker) == 0);
        struct vgpu_handle context = {VGPU_HANDLE_MAGIC, VGPU_CONTEXT, &device, 0, 0, NULL, -1, 0, 0, {0}, NULL};
        vgpu_set_current(&context);
        CUresult result = cuCtxSynchronize();
        const char *name = NULL;
        EXPECT(result == cases[i].answered);
        EXPECT(cuGetErrorName(result, &name) == CUDA_SUCCESS && name != NULL);
        vgpu_set_current(NULL);
        shutdown(ends[0], SHUT_RDWR);
        pthread_join(thread, NULL);
        close(ends[0]);
        close(ends[1]);
        pthread_mutex_destroy(&device.lock);
    }
    vgpu_serving = 0;
}

/* Runs one cuMemHostAlloc, copies to and from it (synchronous, then asynchronous) and cuMemFreeHost against the
   stand-in; the opcodes it got. */
static void host_memory_with(struct region_launcher *launcher, const char *offered, void **kept)
{
    int ends[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    struct vgpu_allocation allocation = {0x100000000ull, 10000, 1};
    struct vgpu_device device = {.fd = ends[0], .next_request_id = 1, .max_threads_per_block = 1024,
                                 .allocations = &allocation, .allocation_count = 1, .allocation_capacity = 1};
    pthread_mutex_init(&device.lock, NULL);
    launcher->fd = ends[1];
    pthread_t thread;
    EXPECT(pthread_create(&thread, NULL, region_launcher_serve, launcher) == 0);
    struct vgpu_handle context = {VGPU_HANDLE_MAGIC, VGPU_CONTEXT, &device, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    vgpu_serving = 1;
    vgpu_set_current(&context);
    if (offered != NULL) {
        setenv("VGPU_HOST_REGIONS", offered, 1);
    } else {
        unsetenv("VGPU_HOST_REGIONS");
    }
    void *host = NULL;
    if (cuMemHostAlloc(&host, 10000, 0) != CUDA_SUCCESS || host == NULL) {
        EXPECT(!"cuMemHostAlloc gave page-locked memory");
        abort();
    }
    memset(host, 0x5a, 10000); /* writable all through */
    EXPECT(cuMemcpyHtoD(0x100000000ull, (uint8_t *)host + 100, 200) == CUDA_SUCCESS);
    EXPECT(cuMemcpyDtoH((uint8_t *)host + 4096, 0x100000000ull, 10000 - 4096) == CUDA_SUCCESS);
    EXPECT(cuMemcpyHtoDAsync(0x100000000ull, host, 300, NULL) == CUDA_SUCCESS);
    EXPECT(cuMemcpyDtoHAsync((uint8_t *)host + 8192, 0x100000000ull, 400, NULL) == CUDA_SUCCESS);
    *kept = host;
    EXPECT(cuMemFreeHost(host) == CUDA_SUCCESS);
    EXPECT(cuMemFreeHost(host) == CUDA_ERROR_INVALID_VALUE);
    unsetenv("VGPU_HOST_REGIONS");
    vgpu_set_current(NULL);
    vgpu_serving = 0;
    close(ends[0]);
    pthread_join(thread, NULL);
    close(ends[1]);
    pthread_mutex_destroy(&device.lock);
}

/* Page-locked memory the launcher shares: copies with it name the region, an offset and a length (no bytes in the
   frame), the asynchronous ones without waiting, cuMemFreeHost frees the region, the file is unlinked once mapped; without the launcher's offer, when it
   refuses, or when its file is not one of this user's alone, the memory is the program's own and copies carry it. */
static void page_locked_memory_is_shared_with_the_launcher_when_it_offers(void)
{
    void *host = NULL;
    struct region_launcher shared = {.mode = 0600};
    host_memory_with(&shared, "1073741824", &host);
    EXPECT(shared.count == 6);
    EXPECT(shared.opcodes[0] == VGPU_OP_HOST_REGION_CREATE && get_be(shared.bodies[0], 8) == 10000);
    EXPECT(shared.opcodes[1] == VGPU_OP_MEMCPY_HTOD_FROM_REGION);
    /* stream 0, destination, region 7, offset 100, 200 bytes */
    EXPECT(get_be(shared.bodies[1], 4) == 0 && get_be(shared.bodies[1] + 4, 8) == 0x100000000ull);
    EXPECT(get_be(shared.bodies[1] + 12, 4) == 7 && get_be(shared.bodies[1] + 16, 8) == 100 &&
           get_be(shared.bodies[1] + 24, 8) == 200);
    EXPECT(shared.opcodes[2] == VGPU_OP_MEMCPY_DTOH_TO_REGION && get_be(shared.bodies[2] + 16, 8) == 4096 &&
           get_be(shared.bodies[2] + 24, 8) == 10000 - 4096);
    EXPECT(shared.flags[1] == 0 && shared.flags[2] == 0); /* the synchronous copies wait for their answers */
    /* the asynchronous ones are sent without waiting: CUDA returns before such a copy is done */
    EXPECT(shared.opcodes[3] == VGPU_OP_MEMCPY_HTOD_FROM_REGION && shared.flags[3] == VGPU_WIRE_FLAG_ASYNC &&
           get_be(shared.bodies[3] + 16, 8) == 0 && get_be(shared.bodies[3] + 24, 8) == 300);
    EXPECT(shared.opcodes[4] == VGPU_OP_MEMCPY_DTOH_TO_REGION && shared.flags[4] == VGPU_WIRE_FLAG_ASYNC &&
           get_be(shared.bodies[4] + 16, 8) == 8192 && get_be(shared.bodies[4] + 24, 8) == 400);
    EXPECT(shared.opcodes[5] == VGPU_OP_HOST_REGION_FREE && get_be(shared.bodies[5], 4) == 7);
    struct stat status;
    EXPECT(stat(shared.path, &status) != 0); /* unlinked as it was mapped */

    struct region_launcher none = {.mode = 0600};
    host_memory_with(&none, NULL, &host);
    EXPECT(none.count >= 2 && none.opcodes[0] == VGPU_OP_MEMCPY_HTOD && none.opcodes[1] == VGPU_OP_MEMCPY_DTOH);

    struct region_launcher foreign = {.mode = 0644};
    host_memory_with(&foreign, "1073741824", &host);
    EXPECT(foreign.count >= 4 && foreign.opcodes[0] == VGPU_OP_HOST_REGION_CREATE);
    EXPECT(foreign.opcodes[1] == VGPU_OP_HOST_REGION_FREE && foreign.opcodes[2] == VGPU_OP_MEMCPY_HTOD);
    EXPECT(stat(foreign.path, &status) != 0);

    struct region_launcher refusing = {.mode = 0600, .refuse = 1};
    host_memory_with(&refusing, "1073741824", &host);
    EXPECT(refusing.count >= 2 && refusing.opcodes[0] == VGPU_OP_HOST_REGION_CREATE &&
           refusing.opcodes[1] == VGPU_OP_MEMCPY_HTOD);
    struct region_launcher asked_no_more = {.mode = 0600};
    host_memory_with(&asked_no_more, "1073741824", &host);
    EXPECT(asked_no_more.count >= 1 && asked_no_more.opcodes[0] == VGPU_OP_MEMCPY_HTOD);
}

/* A child forked while its parent's session was open refuses, closes only its own copy of the socket, sends nothing. */
static void a_forked_child_refuses_without_touching_the_parents_session(void)
{
    int ends[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    struct vgpu_device device = {.fd = ends[0], .next_request_id = 1, .max_threads_per_block = 1024};
    pthread_mutex_init(&device.lock, NULL);
    struct vgpu_handle context = {VGPU_HANDLE_MAGIC, VGPU_CONTEXT, &device, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    vgpu_serving = 1;
    vgpu_forked_child = 1;
    vgpu_set_current(&context);
    CUdeviceptr pointer = 0;
    EXPECT(cuMemAlloc(&pointer, 4096) == CUDA_ERROR_NOT_INITIALIZED);
    EXPECT(cuCtxSynchronize() == CUDA_ERROR_NOT_INITIALIZED);
    EXPECT(device.fd == -1);
    char byte;
    EXPECT(recv(ends[1], &byte, 1, MSG_DONTWAIT) == 0); /* end of stream: closed, and nothing was sent */
    vgpu_set_current(NULL);
    vgpu_forked_child = 0;
    vgpu_serving = 0;
    close(ends[1]);
    pthread_mutex_destroy(&device.lock);
}

/* A node driver's table as the tracer meets one: its size in slot 0, then functions. */
static uintptr_t traced_arguments[6];

static uintptr_t slot_answering_its_arguments_sum(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,
                                                  uintptr_t a4, uintptr_t a5)
{
    uintptr_t arguments[6] = {a0, a1, a2, a3, a4, a5};
    memcpy(traced_arguments, arguments, sizeof arguments);
    return a0 + a1 + a2 + a3 + a4 + a5;
}

static void traced_tables_pass_each_call_to_the_driver(void)
{
    static const void *driver_table[3] = {(const void *)(3 * sizeof(void *)), NULL, NULL};
    driver_table[1] = (const void *)slot_answering_its_arguments_sum;
    const CUuuid id = {{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8,
                        0xf2}};
    unsetenv("VGPU_LIBCUDA_TRACE_TABLES");
    EXPECT(vgpu_traced_table(&id, driver_table) == driver_table);
    setenv("VGPU_LIBCUDA_TRACE_TABLES", "6e163fbe,2131", 1);
    const void *const *traced = vgpu_traced_table(&id, driver_table);
    EXPECT(traced != driver_table && traced[0] == driver_table[0] && traced[2] == NULL);
    EXPECT(vgpu_traced_table(&id, driver_table) == traced);
    uintptr_t (*slot)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t) =
        (uintptr_t(*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t))traced[1];
    EXPECT(slot != slot_answering_its_arguments_sum);
    uintptr_t answer = slot(1, 2, 3, 4, 5, (uintptr_t)&failures);
    EXPECT(answer == 15 + (uintptr_t)&failures);
    EXPECT(traced_arguments[0] == 1 && traced_arguments[4] == 5 && traced_arguments[5] == (uintptr_t)&failures);
    const CUuuid other = {{0x6b, 0xd5, 0xfb, 0x6c}};
    EXPECT(vgpu_traced_table(&other, driver_table) == driver_table);
    unsetenv("VGPU_LIBCUDA_TRACE_TABLES");
}

static void direct_copies_reach_allocations_only(void)
{
    struct vgpu_device device = {.window_base = UINT64_C(0x100000000000), .window_size = VGPU_WINDOW_BYTES};
    uint64_t end = vgpu_allocations_end(&device);
    EXPECT(end == device.window_base + device.window_size - VGPU_MODULE_GLOBALS_BYTES);
    EXPECT(vgpu_direct_copies_at(&device, device.window_base, 4096));
    EXPECT(vgpu_direct_copies_at(&device, end - 4096, 4096));
    /* a module variable's address is the runtime's, not the driver's: its copies are served */
    EXPECT(!vgpu_direct_copies_at(&device, end, 4));
    EXPECT(!vgpu_direct_copies_at(&device, end - 2, 4));
    EXPECT(!vgpu_direct_copies_at(&device, device.window_base - 4, 4));
    EXPECT(!vgpu_direct_copies_at(&device, device.window_base, end - device.window_base + 1));
    EXPECT(!vgpu_direct_copies_at(&device, UINT64_MAX - 2, 4));
    /* a window under twice the area keeps half of itself for them, as the runtime's ModuleGlobals */
    struct vgpu_device small = {.window_base = UINT64_C(0x100000000000), .window_size = 6 * VGPU_WINDOW_ALIGNMENT};
    EXPECT(vgpu_allocations_end(&small) == small.window_base + 3 * VGPU_WINDOW_ALIGNMENT);
}

static void answers_are_kept_until_the_vgpu_moves_where_its_moves_are_known(void)
{
    struct vgpu_device device = {.window_base = UINT64_C(0x100000000000), .window_size = VGPU_WINDOW_BYTES};
    int value = -1;
    /* over a socket the library learns of no move: nothing is kept */
    EXPECT(vgpu_kept_tag(&device) == 0);
    vgpu_keep_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), 1024);
    EXPECT(!vgpu_kept_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), &value) && value == -1);
    /* in process each move ends an epoch first */
    atomic_store(&device.direct.moves_known, 1);
    unsigned tag = vgpu_kept_tag(&device);
    EXPECT(tag != 0);
    EXPECT(!vgpu_kept_answer(&device.kept_attributes[1], tag, &value));
    vgpu_keep_answer(&device.kept_attributes[1], tag, 1024);
    vgpu_keep_answer(&device.kept_attributes[2], tag, -7);
    EXPECT(vgpu_kept_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), &value) && value == 1024);
    EXPECT(vgpu_kept_answer(&device.kept_attributes[2], vgpu_kept_tag(&device), &value) && value == -7);
    /* a move (its stop ends the epoch): asked again, and an answer asked before it is not kept under the new tag */
    atomic_fetch_add(&device.direct.epoch, 1);
    EXPECT(!vgpu_kept_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), &value));
    vgpu_keep_answer(&device.kept_attributes[1], tag, 2048);
    EXPECT(!vgpu_kept_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), &value));
    vgpu_keep_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), 2048);
    EXPECT(vgpu_kept_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), &value) && value == 2048);
    /* a setting the program may change is kept until it changes one, and until a move */
    unsigned setting = vgpu_kept_setting_tag(&device);
    EXPECT(setting != 0);
    vgpu_keep_answer(&device.kept_attributes[3], setting, 49152);
    EXPECT(vgpu_kept_answer(&device.kept_attributes[3], vgpu_kept_setting_tag(&device), &value) && value == 49152);
    vgpu_settings_changed(&device);
    EXPECT(!vgpu_kept_answer(&device.kept_attributes[3], vgpu_kept_setting_tag(&device), &value));
    EXPECT(vgpu_kept_answer(&device.kept_attributes[1], vgpu_kept_tag(&device), &value) && value == 2048);
    vgpu_keep_answer(&device.kept_attributes[3], vgpu_kept_setting_tag(&device), 98304);
    atomic_fetch_add(&device.direct.epoch, 1);
    EXPECT(!vgpu_kept_answer(&device.kept_attributes[3], vgpu_kept_setting_tag(&device), &value));
    atomic_store(&device.direct.moves_known, 0); /* over a socket: nothing kept */
    EXPECT(vgpu_kept_setting_tag(&device) == 0);
}

/* A closing session waits a bounded time for direct calls under way (a synchronization with a GPU whose work does not
   end would hold the program's exit), and no direct call enters after it. */
static void a_closing_session_waits_for_direct_calls_a_bounded_time(void)
{
    struct vgpu_device device = {.index = 3, .window_base = UINT64_C(0x100000000000), .window_size = VGPU_WINDOW_BYTES};
    atomic_store(&device.direct.state, VGPU_DIRECT_OPEN);
    atomic_store(&device.direct.in_flight, 1);
    EXPECT(vgpu_direct_end_within(&device, 20000000) == 0); /* 20 ms: the call stays under way */
    EXPECT(atomic_load(&device.direct.state) == VGPU_DIRECT_OFF);
    atomic_store(&device.direct.in_flight, 0);
    EXPECT(vgpu_direct_end_within(&device, 20000000) == 1);
}

/* A module variable the program was given the address of is device memory of its vGPU, once however often it is
   asked, until its module is unloaded; another module's stay. */
static void module_variables_are_device_memory_until_their_module_goes(void)
{
    struct vgpu_device device = {.window_base = UINT64_C(0x100000000000), .window_size = VGPU_WINDOW_BYTES};
    pthread_mutex_init(&device.lock, NULL);
    uint64_t variables = vgpu_allocations_end(&device);
    struct vgpu_allocation found = {0};
    EXPECT(!vgpu_allocation_at(&device, variables + 8, &found));
    EXPECT(vgpu_keep_module_variable(&device, 7, variables, 16) == 0);
    EXPECT(vgpu_keep_module_variable(&device, 7, variables, 16) == 0);
    EXPECT(vgpu_keep_module_variable(&device, 9, variables + 256, 4) == 0);
    EXPECT(device.variable_count == 2);
    EXPECT(vgpu_allocation_at(&device, variables + 8, &found) && found.address == variables && found.bytes == 16);
    uint64_t first_id = found.buffer_id;
    EXPECT(!vgpu_allocation_at(&device, variables + 16, &found));
    EXPECT(vgpu_allocation_at(&device, variables + 259, &found) && found.buffer_id != first_id);
    vgpu_forget_module_variables(&device, 7);
    EXPECT(!vgpu_allocation_at(&device, variables + 8, &found));
    EXPECT(vgpu_allocation_at(&device, variables + 256, &found) && found.address == variables + 256);
    free(device.variables);
    pthread_mutex_destroy(&device.lock);
}

/* Once its session is open a vGPU is found open without its lock; a session that broke is found broken again, not
   open, and its calls fail with the reason the break gave. */
static void a_broken_session_is_not_found_open(void)
{
    int ends[2];
    EXPECT(socketpair(AF_UNIX, SOCK_STREAM, 0, ends) == 0);
    struct vgpu_device device = {.fd = ends[0], .next_request_id = 1, .open_failure = CUDA_SUCCESS};
    pthread_mutex_init(&device.lock, NULL);
    atomic_store(&device.opened, 1); /* as vgpu_connect leaves it */
    EXPECT(vgpu_open_locking(&device) == CUDA_SUCCESS);
    close(ends[1]); /* the local worker went away */
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_CTX_SYNCHRONIZE);
    EXPECT(vgpu_locked_call(&device, &request, NULL) == CUDA_ERROR_LAUNCH_FAILED);
    EXPECT(device.fd == -1);
    EXPECT(vgpu_open_locking(&device) == CUDA_ERROR_LAUNCH_FAILED);
    pthread_mutex_destroy(&device.lock);
}

int main(void)
{
    newest_version_the_program_knows();
    per_thread_variant_when_asked();
    lookups_answer_as_the_driver_does();
    no_driver_means_an_error_not_a_crash();
    every_name_has_one_id();
    calls_are_counted_under_their_name();
    calls_are_timed_for_the_report_only();
    refusals_say_why();
    older_names_are_exported_too();
    the_integrity_digest_is_the_one_the_runtime_computes();
    known_tables_are_served_and_others_refused();
    tables_known_by_size_refuse_every_slot_not_served();
    context_queries_answer_as_the_driver_without_a_context();
    context_local_storage_keeps_values_by_context_and_key();
    occupancy_is_limited_by_threads_registers_and_shared_memory();
    launches_and_kernel_queries_refuse_bad_calls();
    launches_wait_for_no_answer_within_the_window();
    async_copies_of_pageable_memory_wait_for_no_answer();
    copies_memsets_and_registrations_refuse_bad_calls();
    captures_record_work_that_each_graph_launch_sends();
    traced_tables_pass_each_call_to_the_driver();
    a_forked_child_refuses_without_touching_the_parents_session();
    page_locked_memory_is_shared_with_the_launcher_when_it_offers();
    vgpu_errors_reach_the_program_as_cuda_errors();
    direct_copies_reach_allocations_only();
    answers_are_kept_until_the_vgpu_moves_where_its_moves_are_known();
    a_closing_session_waits_for_direct_calls_a_bounded_time();
    module_variables_are_device_memory_until_their_module_goes();
    a_broken_session_is_not_found_open();
    if (failures != 0) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("libcuda unit tests: all passed\n");
    return 0;
}
