/* The entry points' names, dispositions and call counts, from the generated list. */
#include "libcuda_internal.h"
#include "entry_points.h"
#include "served.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct entry_point {
    const char *name;
    enum vgpu_disposition disposition;
    const char *reason;
};

#define VGPU_DESCRIBE(id, name, disposition, reason) [id] = {name, disposition, reason},
static const struct entry_point entry_points[VGPU_ENTRY_POINT_COUNT] = {VGPU_ENTRY_POINTS(VGPU_DESCRIBE)};

/* Relaxed: a count is read only at the report, after the program's threads are done with CUDA. */
static atomic_ullong calls[VGPU_ENTRY_POINT_COUNT];

/* Calls are counted only for a report: a count is an atomic add on a line other threads' counts share,
   which a launch-heavy program's threads would pay on every call (set at load, read-only after). */
int vgpu_counting;

int vgpu_verbose;

/* Each entry point's call times by size, for their median: a whole run's mean mixes a library's first calls (loading
   its kernels) with the steady ones. Eight buckets per power of two (each 9 % wide) from 64 ns; allocated only for a
   report. */
#define TIME_BUCKETS_PER_OCTAVE 8
#define FIRST_OCTAVE 6
#define OCTAVES 31
#define TIME_BUCKETS (OCTAVES * TIME_BUCKETS_PER_OCTAVE)
static _Atomic unsigned (*call_times)[TIME_BUCKETS];

__attribute__((constructor(101))) static void decide_counting(void)
{
    const char *report = getenv("VGPU_LIBCUDA_REPORT");
    vgpu_counting = report != NULL && report[0] != '\0';
    vgpu_verbose = getenv("VGPU_LIBCUDA_VERBOSE") != NULL;
    if (vgpu_counting) {
        vgpu_keep_call_times();
    }
}

void vgpu_keep_call_times(void)
{
    if (call_times == NULL) {
        call_times = calloc(VGPU_ENTRY_POINT_COUNT, sizeof *call_times); /* NULL: the report gives no medians */
    }
}

/* The bucket of a call that took nanos: its power of two and the next three bits below its highest. */
static int time_bucket(uint64_t nanos)
{
    if (nanos < (UINT64_C(1) << FIRST_OCTAVE)) {
        return 0;
    }
    int octave = 63 - __builtin_clzll(nanos);
    if (octave >= FIRST_OCTAVE + OCTAVES) {
        return TIME_BUCKETS - 1;
    }
    int below = (int)(nanos >> (octave - 3)) & (TIME_BUCKETS_PER_OCTAVE - 1);
    return (octave - FIRST_OCTAVE) * TIME_BUCKETS_PER_OCTAVE + below;
}

/* The middle of a bucket, in nanoseconds. */
static double bucket_middle(int bucket)
{
    int octave = bucket / TIME_BUCKETS_PER_OCTAVE + FIRST_OCTAVE;
    int below = bucket % TIME_BUCKETS_PER_OCTAVE;
    return ((double)(TIME_BUCKETS_PER_OCTAVE + below) + 0.5) * (double)(UINT64_C(1) << (octave - 3));
}

void vgpu_say_failed_call(int id, CUresult result)
{
    const char *name = NULL;
    (void)vgpu_served_cuGetErrorName(result, &name);
    vgpu_say("%s answered %s (%d) on a vGPU", vgpu_entry_name(id), name != NULL ? name : "an error", (int)result);
}

const char *vgpu_entry_name(int id)
{
    return id >= 0 && id < VGPU_ENTRY_POINT_COUNT ? entry_points[id].name : "?";
}

enum vgpu_disposition vgpu_entry_disposition(int id, const char **reason)
{
    if (id < 0 || id >= VGPU_ENTRY_POINT_COUNT) {
        *reason = "";
        return VGPU_PASS;
    }
    *reason = entry_points[id].reason;
    return entry_points[id].disposition;
}

/* Whether this call is the program's: not one of those vgpu's own runtime makes when it serves the program in its
   process (its native backend's, which pass through this library to the node's driver). */
static int the_programs_call(void)
{
    return !(__atomic_load_n(&vgpu_in_process_started, __ATOMIC_RELAXED) && vgpu_in_process_runtime_thread());
}

void vgpu_count(int id)
{
    if (vgpu_counting && the_programs_call()) {
        atomic_fetch_add_explicit(&calls[id], 1, memory_order_relaxed);
    }
}

static atomic_ullong call_nanos[VGPU_ENTRY_POINT_COUNT];
static atomic_ullong direct_calls[VGPU_ENTRY_POINT_COUNT];
_Thread_local unsigned vgpu_direct_calls_made;

uint64_t vgpu_call_clock(void)
{
    if (!vgpu_counting || !the_programs_call()) {
        return 0;
    }
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec + 1; /* + 1: never 0, which times nothing */
}

void vgpu_call_took(int id, uint64_t started)
{
    uint64_t now = vgpu_call_clock();
    if (now > started) {
        atomic_fetch_add_explicit(&call_nanos[id], now - started, memory_order_relaxed);
        if (call_times != NULL) {
            atomic_fetch_add_explicit(&call_times[id][time_bucket(now - started)], 1, memory_order_relaxed);
        }
    }
    if (vgpu_direct_calls_made != 0) {
        atomic_fetch_add_explicit(&direct_calls[id], vgpu_direct_calls_made, memory_order_relaxed);
        vgpu_direct_calls_made = 0;
    }
}

unsigned long long vgpu_direct_calls(int id)
{
    return id >= 0 && id < VGPU_ENTRY_POINT_COUNT ? atomic_load_explicit(&direct_calls[id], memory_order_relaxed) : 0;
}

double vgpu_median_call_nanos(int id)
{
    if (call_times == NULL || id < 0 || id >= VGPU_ENTRY_POINT_COUNT) {
        return -1;
    }
    unsigned long long timed = 0;
    for (int bucket = 0; bucket < TIME_BUCKETS; bucket++) {
        timed += atomic_load_explicit(&call_times[id][bucket], memory_order_relaxed);
    }
    unsigned long long seen = 0;
    for (int bucket = 0; bucket < TIME_BUCKETS && timed > 0; bucket++) {
        seen += atomic_load_explicit(&call_times[id][bucket], memory_order_relaxed);
        if (2 * seen >= timed) {
            return bucket_middle(bucket);
        }
    }
    return -1;
}

unsigned long long vgpu_call_nanos(int id)
{
    return id >= 0 && id < VGPU_ENTRY_POINT_COUNT ? atomic_load_explicit(&call_nanos[id], memory_order_relaxed) : 0;
}

unsigned long long vgpu_calls(int id)
{
    return id >= 0 && id < VGPU_ENTRY_POINT_COUNT ? atomic_load_explicit(&calls[id], memory_order_relaxed) : 0;
}

int vgpu_entry_id(const char *name)
{
    int low = 0;
    int high = VGPU_ENTRY_POINT_COUNT - 1;
    while (low <= high) { /* the generator writes the names sorted */
        int middle = low + (high - low) / 2;
        int order = strcmp(entry_points[middle].name, name);
        if (order == 0) {
            return middle;
        }
        if (order < 0) {
            low = middle + 1;
        } else {
            high = middle - 1;
        }
    }
    return -1;
}
