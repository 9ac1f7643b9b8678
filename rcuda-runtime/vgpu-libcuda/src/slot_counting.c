/*
 * Counting the calls into the driver's export tables (the functions cudart and NVIDIA's libraries
 * reach by table id, with no name and no published signature): each slot that points into the
 * driver is replaced, in a copy of the table, by a trampoline that counts the call and jumps to the
 * driver's function with every register as the caller left it, so it works for any signature.
 *
 * Only tables whose first word is their size in bytes are counted (most are; one is known whose
 * first slot is already a function): any other is handed out as the driver gave it.
 */
#include "libcuda_internal.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* As generate/entry_points.py writes the trampolines: how many, and the bytes each takes. */
#define MAX_COUNTED_SLOTS 512
#define TRAMPOLINE_BYTES 32
#define MAX_TABLE_BYTES 4096

/* Written by the trampolines (slot_trampolines.S): calls per trampoline, and where each jumps. */
extern unsigned long long vgpu_slot_calls[MAX_COUNTED_SLOTS];
extern const void *vgpu_slot_targets[MAX_COUNTED_SLOTS];
extern const unsigned char vgpu_slot_trampolines[];

struct counted_table {
    CUuuid id;
    const void *const *original;
    const void **copy;
    size_t slots;
    int first_trampoline; /* trampoline of slot 1; slot i uses first_trampoline + i - 1 */
};

static struct counted_table counted[32];
static size_t counted_count;
static int trampolines_used;
static pthread_mutex_t counting_lock = PTHREAD_MUTEX_INITIALIZER;

struct code_search {
    uintptr_t address;
    uintptr_t object_base; /* the driver's load address, from dladdr */
    int found;
};

static int in_executable_segment(struct dl_phdr_info *object, size_t size, void *context)
{
    (void)size;
    struct code_search *search = context;
    if (object->dlpi_addr != search->object_base) {
        return 0;
    }
    for (int i = 0; i < object->dlpi_phnum; i++) {
        const ElfW(Phdr) *segment = &object->dlpi_phdr[i];
        uintptr_t start = object->dlpi_addr + segment->p_vaddr;
        if (segment->p_type == PT_LOAD && (segment->p_flags & PF_X) != 0 && search->address >= start &&
            search->address - start < segment->p_memsz) {
            search->found = 1;
        }
    }
    return 1;
}

/* Whether address is code of the object driver_base was loaded at: a table's slot may also point at data. */
static int is_code_of(const void *address, uintptr_t driver_base)
{
    Dl_info info;
    if (address == NULL || dladdr(address, &info) == 0 || (uintptr_t)info.dli_fbase != driver_base) {
        return 0;
    }
    struct code_search search = {(uintptr_t)address, 0, 0};
    struct link_map *map = NULL;
    if (dladdr1(address, &info, (void **)&map, RTLD_DL_LINKMAP) == 0 || map == NULL) {
        return 0;
    }
    search.object_base = map->l_addr;
    dl_iterate_phdr(in_executable_segment, &search);
    return search.found;
}

const void *vgpu_counted_export_table(const CUuuid *id, const void *table)
{
    const void *const *slots = table;
    uintptr_t size = table == NULL ? 0 : (uintptr_t)slots[0];
    Dl_info driver;
    if (size < 2 * sizeof(void *) || size > MAX_TABLE_BYTES || size % sizeof(void *) != 0 ||
        dladdr(slots[1], &driver) == 0 || driver.dli_fname == NULL) {
        return table;
    }
    const void *answer = table;
    pthread_mutex_lock(&counting_lock);
    for (size_t i = 0; i < counted_count; i++) {
        if (counted[i].original == slots) {
            answer = counted[i].copy;
            goto done;
        }
    }
    size_t count = size / sizeof(void *);
    if (counted_count == sizeof counted / sizeof counted[0] || trampolines_used + (int)count - 1 > MAX_COUNTED_SLOTS) {
        goto done;
    }
    const void **copy = malloc(size);
    if (copy == NULL) {
        goto done;
    }
    memcpy(copy, slots, size);
    struct counted_table *entry = &counted[counted_count++];
    entry->id = *id;
    entry->original = slots;
    entry->copy = copy;
    entry->slots = count;
    entry->first_trampoline = trampolines_used;
    for (size_t slot = 1; slot < count; slot++) {
        int trampoline = trampolines_used++;
        if (is_code_of(slots[slot], (uintptr_t)driver.dli_fbase)) {
            vgpu_slot_targets[trampoline] = slots[slot];
            copy[slot] = vgpu_slot_trampolines + (size_t)trampoline * TRAMPOLINE_BYTES;
        }
    }
    answer = copy;
done:
    pthread_mutex_unlock(&counting_lock);
    return answer;
}

void vgpu_for_each_counted_slot(void (*visit)(const CUuuid *id, size_t slot, unsigned long long calls, void *context),
                                void *context)
{
    pthread_mutex_lock(&counting_lock);
    for (size_t i = 0; i < counted_count; i++) {
        for (size_t slot = 1; slot < counted[i].slots; slot++) {
            unsigned long long calls =
                __atomic_load_n(&vgpu_slot_calls[counted[i].first_trampoline + (int)slot - 1], __ATOMIC_RELAXED);
            if (calls != 0) {
                visit(&counted[i].id, slot, calls, context);
            }
        }
    }
    pthread_mutex_unlock(&counting_lock);
}
