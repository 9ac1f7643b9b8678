/*
 * vgpu's libcuda.so.1: what a CUDA program finds in place of the driver. The program reaches every
 * driver function through cuGetProcAddress (cudart does, for static and shared builds alike) or
 * through the exported symbols (programs linked with -lcuda); both are generated from the toolkit's
 * headers, so every function the toolkit declares is answered, each counted and passed on.
 *
 * Today every call is passed to the node's real driver: the library is the call surface that
 * serving vGPUs replaces entry point by entry point (README.md says what is served).
 */
#include "libcuda_internal.h"
#include "served_tables.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#undef cuGetProcAddress

typedef CUresult (*get_proc_address_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*get_export_table_fn)(const void **, const CUuuid *);

static get_proc_address_fn real_get_proc_address;
static get_export_table_fn real_get_export_table;

void vgpu_say(const char *format, ...)
{
    char line[1024];
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(line, sizeof line, format, arguments);
    va_end(arguments);
    fprintf(stderr, "vgpu libcuda: %s\n", line);
}

/* The real driver's function for entry, asked at the entry's own version, so its type is entry's. */
static void resolve_proc_entry(const struct vgpu_proc_entry *entry)
{
    cuuint64_t flags = entry->flavor == VGPU_STREAM_PER_THREAD ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                               : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    void *function = NULL;
    if (real_get_proc_address(entry->name, &function, entry->version, flags, &found) == CUDA_SUCCESS &&
        found == CU_GET_PROC_ADDRESS_SUCCESS) {
        *entry->real = function;
    }
}

/*
 * At load, before any thread of the program can call in: every generated function's real target is
 * set here once, so the calls read it without synchronizing.
 */
__attribute__((constructor)) static void resolve_all(void)
{
    if (vgpu_serving && !vgpu_in_process_chosen()) {
        return; /* the program's vGPUs are served through `vgpu run`'s socket: the node's driver is not loaded */
    }
    /* Serving in process, the driver is loaded all the same: vgpu's runtime in this process reaches it through this
       library (vgpu_serves_this_thread). */
    void *driver = vgpu_real_driver();
    if (driver == NULL) {
        return;
    }
    real_get_proc_address = (get_proc_address_fn)dlsym(driver, "cuGetProcAddress_v2");
    real_get_export_table = (get_export_table_fn)dlsym(driver, "cuGetExportTable");
    for (size_t i = 0; i < vgpu_export_count; i++) {
        *vgpu_exports[i].real = dlsym(driver, vgpu_exports[i].symbol);
    }
    for (size_t i = 0; i < vgpu_legacy_export_count; i++) {
        *vgpu_legacy_exports[i].real = dlsym(driver, vgpu_legacy_exports[i].symbol);
    }
    if (real_get_proc_address == NULL) {
        vgpu_say("this node's CUDA driver has no cuGetProcAddress_v2 (older than CUDA 12): nothing is passed to it");
        return;
    }
    for (size_t i = 0; i < vgpu_proc_entry_count; i++) {
        resolve_proc_entry(&vgpu_proc_entries[i]);
    }
}

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus);
CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId);

static CUresult answer(CUdriverProcAddressQueryResult *status, CUdriverProcAddressQueryResult value, CUresult result)
{
    if (status != NULL) {
        *status = value;
    }
    return result;
}

VGPU_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult *symbolStatus)
{
    if (symbol == NULL || pfn == NULL) {
        return answer(symbolStatus, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CUDA_ERROR_INVALID_VALUE);
    }
    *pfn = NULL;
    vgpu_count(vgpu_entry_id("cuGetProcAddress"));
    if (strcmp(symbol, "cuGetProcAddress") == 0) {
        *pfn = cudaVersion >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
        return answer(symbolStatus, CU_GET_PROC_ADDRESS_SUCCESS, CUDA_SUCCESS);
    }
    if (strcmp(symbol, "cuGetExportTable") == 0) {
        *pfn = (void *)cuGetExportTable;
        return answer(symbolStatus, CU_GET_PROC_ADDRESS_SUCCESS, CUDA_SUCCESS);
    }
    const struct vgpu_proc_entry *entry = vgpu_find_proc_entry(symbol, cudaVersion, flags);
    if (entry == NULL && real_get_proc_address != NULL && !vgpu_serves_this_thread()) {
        /* a function the toolkit vgpu was built with does not declare (a newer driver's, or one the
           toolkit keeps to itself): the driver's own, handed out uncounted, and named in the report */
        CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        CUresult result = real_get_proc_address(symbol, pfn, cudaVersion, flags, &found);
        vgpu_note_unknown_entry(symbol, result == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS);
        return answer(symbolStatus, found, result);
    }
    if (entry == NULL) {
        return vgpu_proc_name_known(symbol)
                   ? answer(symbolStatus, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CUDA_ERROR_NOT_FOUND)
                   : answer(symbolStatus, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
    }
    *pfn = entry->function;
    return answer(symbolStatus, CU_GET_PROC_ADDRESS_SUCCESS, CUDA_SUCCESS);
}

/* The CUDA 11.3 form, which programs built before CUDA 12 still call by this name. */
VGPU_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

VGPU_EXPORT CUresult CUDAAPI cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
    vgpu_count(vgpu_entry_id("cuGetExportTable"));
    if (ppExportTable == NULL || pExportTableId == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *ppExportTable = NULL;
    if (vgpu_serves_this_thread()) {
        CUresult result = vgpu_served_export_table(ppExportTable, pExportTableId);
        vgpu_note_export_table(pExportTableId, result);
        return result;
    }
    CUresult result = real_get_export_table != NULL ? real_get_export_table(ppExportTable, pExportTableId)
                                                    : vgpu_unresolved("cuGetExportTable");
    if (result == CUDA_SUCCESS) {
        *ppExportTable = vgpu_traced_table(pExportTableId, *ppExportTable);
    }
    vgpu_note_export_table(pExportTableId, result);
    return result;
}
