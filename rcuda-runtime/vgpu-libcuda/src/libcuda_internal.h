/* vgpu's libcuda.so.1: what its parts share. */
#ifndef VGPU_LIBCUDA_INTERNAL_H
#define VGPU_LIBCUDA_INTERNAL_H

#include <cuda.h>
#include <stddef.h>

/* The driver's own names, which the library exports; everything else is hidden (-fvisibility=hidden). */
#define VGPU_EXPORT __attribute__((visibility("default")))

/* What vgpu does with an entry point (entry-points.conf). */
enum vgpu_disposition {
    VGPU_PASS,   /* not served by vgpu yet: the real driver answers it in pass-through mode */
    VGPU_SERVE,  /* served by vgpu itself */
    VGPU_REFUSE  /* never served on a vGPU: a call is refused with its name and the reason */
};

/* Which default stream an entry point's variant means (cuGetProcAddress's flags choose). */
enum vgpu_stream_flavor { VGPU_STREAM_LEGACY, VGPU_STREAM_PER_THREAD };

/* One function cuGetProcAddress hands out: generated from the toolkit's cudaTypedefs.h. */
struct vgpu_proc_entry {
    const char *name;
    int version;
    enum vgpu_stream_flavor flavor;
    int id;
    void *function;
    void **real; /* the real driver's function it calls, set when it is first handed out */
};

/* One symbol a program linked with -lcuda calls: generated from the toolkit's cuda.h. */
struct vgpu_export {
    const char *symbol;
    void **real;
};

extern const struct vgpu_proc_entry vgpu_proc_entries[];
extern const size_t vgpu_proc_entry_count;
extern const struct vgpu_export vgpu_exports[];
extern const size_t vgpu_export_count;
extern const struct vgpu_export vgpu_legacy_exports[];
extern const size_t vgpu_legacy_export_count;

/* entry_points.c: the names, dispositions and call counts of every entry point. */
const char *vgpu_entry_name(int id);
enum vgpu_disposition vgpu_entry_disposition(int id, const char **reason);
void vgpu_count(int id);
/* Whether calls are counted: only when a report is asked for (VGPU_LIBCUDA_REPORT). */
extern int vgpu_counting;
unsigned long long vgpu_calls(int id);
int vgpu_entry_id(const char *name);

/* lookup.c: which generated entry answers a cuGetProcAddress request (NULL: none). */
const struct vgpu_proc_entry *vgpu_find_proc_entry(const char *name, int cuda_version, cuuint64_t flags);
/* lookup.c: whether some version of name exists at all (to tell "too new" from "unknown"). */
int vgpu_proc_name_known(const char *name);

/* real_driver.c: the driver vgpu passes calls to, loaded privately; NULL when there is none. */
void *vgpu_real_driver(void);
const char *vgpu_real_driver_problem(void);
CUresult vgpu_unresolved(const char *symbol);

/* report.c: the export tables programs asked for, and the report written at exit. */
void vgpu_note_export_table(const CUuuid *id, CUresult answer);
/* report.c: an export table's id as text, 8-4-4-4-12 hexadecimal digits, as messages and reports name it. */
void vgpu_table_id_text(const CUuuid *id, char text[37]);
/* The node driver's table, or a copy of it whose slots say each call (VGPU_LIBCUDA_TRACE_TABLES). */
const void *vgpu_traced_table(const CUuuid *id, const void *driver_table);
/* report.c: a name cuGetProcAddress was asked for that the toolkit's headers do not declare. */
void vgpu_note_unknown_entry(const char *name, int driver_has_it);

/* serving.c: whether this process's calls are served by vgpu on its vGPUs (set once, at load, from the
   environment `vgpu run` gives a program) rather than passed to the node's driver. */
extern int vgpu_serving;
/* in_process.c: set once this library starts vgpu's Java runtime in the program's process
   (VGPU_LIBCUDA_SERVING=in-process); read on every call, so a plain flag tested before anything else. */
extern int vgpu_in_process_started;
/* in_process.c: whether VGPU_LIBCUDA_SERVING chose serving in the program's process. */
int vgpu_in_process_chosen(void);
/* How many requests the library handed to its runtime in process, and in how many calls into it (*calls): the report's
   line of them (asynchronous requests wait for the next one that is answered). */
unsigned long long vgpu_in_process_requests(unsigned long long *calls);
/* in_process.c: whether the calling thread is running vgpu's runtime in this process: a thread of its JVM, or a program
   thread inside a request it hands that runtime. */
int vgpu_in_process_runtime_thread(void);
/* Whether this call is served on the program's vGPUs. Not on a thread of vgpu's own runtime serving in this process:
   its native backend calls the node's driver through JCuda, whose library binds libcuda.so.1 by name, and in this
   process that name is this library; those calls pass to the node's driver, or the runtime would wait on itself. */
static inline int vgpu_serves_this_thread(void)
{
    return vgpu_serving &&
           !(__builtin_expect(__atomic_load_n(&vgpu_in_process_started, __ATOMIC_RELAXED), 0) &&
             vgpu_in_process_runtime_thread());
}
/* Set in a child forked while its parent had a vGPU session open: every session call is refused there. */
extern int vgpu_forked_child;
/* serving.c: the answer to an entry point vgpu does not serve on a vGPU: CUDA_ERROR_NOT_SUPPORTED, and
   a line naming the call (and entry-points.conf's reason) the first time. */
CUresult vgpu_refuse(int id);
/* entry_points.c: whether each served call that fails is said (VGPU_LIBCUDA_VERBOSE; set at load, read-only after). */
extern int vgpu_verbose;
void vgpu_say_failed_call(int id, CUresult result);
/* entry_points.c: with a report asked for, the time each of the program's calls took (served in vgpu, or passed to the
   node's driver), from vgpu_call_clock's reading before it (0 without a report, and for vgpu's own runtime's calls in
   the program's process: nothing is timed) to its answer. */
uint64_t vgpu_call_clock(void);
void vgpu_call_took(int id, uint64_t started);
unsigned long long vgpu_call_nanos(int id);
/* Keeps each timed call's time for the medians (done at load when a report is asked for). */
void vgpu_keep_call_times(void);
/* The median time of id's timed calls in nanoseconds, within 9 % (the middle of its bucket); -1 when none was timed. */
double vgpu_median_call_nanos(int id);
/* direct.c counts here each direct call this thread makes to the node's driver; vgpu_call_took credits them to the
   entry point whose served call made them and starts again, so the report says which calls reached the driver itself
   (read only with a report asked for). */
extern _Thread_local unsigned vgpu_direct_calls_made;
unsigned long long vgpu_direct_calls(int id);
/* The answer of a call passed to the node's driver, timed from started (see vgpu_call_clock). */
static inline CUresult vgpu_timed_result(int id, uint64_t started, CUresult result)
{
    if (__builtin_expect(started != 0, 0)) {
        vgpu_call_took(id, started);
    }
    return result;
}

/* The answer of a served call, said when it is an error and VGPU_LIBCUDA_VERBOSE is set: a library that gives up
   after a failed driver call (cuBLAS's "not initialized") then shows which call it was; timed from started (see
   vgpu_call_clock). One test on each otherwise. */
static inline CUresult vgpu_served_result(int id, uint64_t started, CUresult result)
{
    vgpu_timed_result(id, started, result);
    if (__builtin_expect(result != CUDA_SUCCESS, 0) && vgpu_verbose) {
        vgpu_say_failed_call(id, result);
    }
    return result;
}

/* errors.c (generated): every CUresult's name and description, from cuda.h. */
struct vgpu_error_text {
    int code;
    const char *name;
    const char *description;
};
extern const struct vgpu_error_text vgpu_error_texts[];
extern const size_t vgpu_error_text_count;

/* Messages in the product's own words, on stderr, prefixed "vgpu libcuda: ". */
void vgpu_say(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
