/*
 * cuGetProcAddress, as the driver answers it: of the functions a name has, the newest whose version
 * the program's CUDA knows (cudaVersion), in the per-thread default stream's variant when the flags
 * ask for it and the name has one.
 */
#include "libcuda_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const struct vgpu_proc_entry **by_name;
static pthread_once_t indexed = PTHREAD_ONCE_INIT;

static int entry_order(const void *left, const void *right)
{
    const struct vgpu_proc_entry *a = *(const struct vgpu_proc_entry *const *)left;
    const struct vgpu_proc_entry *b = *(const struct vgpu_proc_entry *const *)right;
    return strcmp(a->name, b->name);
}

static void index_entries(void)
{
    by_name = calloc(vgpu_proc_entry_count, sizeof *by_name);
    if (by_name == NULL) {
        return;
    }
    for (size_t i = 0; i < vgpu_proc_entry_count; i++) {
        by_name[i] = &vgpu_proc_entries[i];
    }
    qsort(by_name, vgpu_proc_entry_count, sizeof *by_name, entry_order);
}

/* The first of the entries named name in by_name, or vgpu_proc_entry_count. */
static size_t first_named(const char *name)
{
    size_t low = 0;
    size_t high = vgpu_proc_entry_count;
    while (low < high) {
        size_t middle = low + (high - low) / 2;
        if (strcmp(by_name[middle]->name, name) < 0) {
            low = middle + 1;
        } else {
            high = middle;
        }
    }
    return low < vgpu_proc_entry_count && strcmp(by_name[low]->name, name) == 0 ? low : vgpu_proc_entry_count;
}

const struct vgpu_proc_entry *vgpu_find_proc_entry(const char *name, int cuda_version, cuuint64_t flags)
{
    pthread_once(&indexed, index_entries);
    if (by_name == NULL || name == NULL) {
        return NULL;
    }
    enum vgpu_stream_flavor wanted =
        (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0 ? VGPU_STREAM_PER_THREAD : VGPU_STREAM_LEGACY;
    const struct vgpu_proc_entry *best = NULL;
    const struct vgpu_proc_entry *best_legacy = NULL;
    for (size_t i = first_named(name); i < vgpu_proc_entry_count && strcmp(by_name[i]->name, name) == 0; i++) {
        const struct vgpu_proc_entry *entry = by_name[i];
        if (entry->version > cuda_version) {
            continue;
        }
        if (entry->flavor == wanted && (best == NULL || entry->version > best->version)) {
            best = entry;
        }
        if (entry->flavor == VGPU_STREAM_LEGACY && (best_legacy == NULL || entry->version > best_legacy->version)) {
            best_legacy = entry;
        }
    }
    /* a name without a per-thread variant takes no stream: its one function serves both */
    return best != NULL ? best : best_legacy;
}

int vgpu_proc_name_known(const char *name)
{
    pthread_once(&indexed, index_entries);
    return by_name != NULL && name != NULL && first_named(name) < vgpu_proc_entry_count;
}
