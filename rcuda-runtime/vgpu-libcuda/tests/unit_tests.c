/*
 * Unit tests of vgpu's libcuda.so.1 that need no GPU and no driver: how cuGetProcAddress chooses,
 * what the generated tables hold, and that a call with no driver behind it fails with an error
 * instead of crashing. Run under AddressSanitizer + UBSan by `make test`.
 */
#include "libcuda_internal.h"
#include "entry_points.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void refusals_say_why(void)
{
    const char *reason = NULL;
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuIpcOpenMemHandle"), &reason) == VGPU_REFUSE);
    EXPECT(reason != NULL && strstr(reason, "IPC") != NULL);
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuMemAllocManaged"), &reason) == VGPU_REFUSE);
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuMemAlloc"), &reason) == VGPU_SERVE);
    EXPECT(vgpu_entry_disposition(vgpu_entry_id("cuGraphLaunch"), &reason) == VGPU_PASS && reason[0] == '\0');
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

int main(void)
{
    newest_version_the_program_knows();
    per_thread_variant_when_asked();
    lookups_answer_as_the_driver_does();
    no_driver_means_an_error_not_a_crash();
    every_name_has_one_id();
    calls_are_counted_under_their_name();
    refusals_say_why();
    older_names_are_exported_too();
    if (failures != 0) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("libcuda unit tests: all passed\n");
    return 0;
}
