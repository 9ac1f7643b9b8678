/*
 * What the program asked of the driver, written at its exit when VGPU_LIBCUDA_REPORT names a file
 * ("%p" in the name becomes the process id, for programs of several processes): each entry point it
 * called, how often, and what vgpu does with it; each export table it asked for and the answer.
 */
#include "libcuda_internal.h"
#include "entry_points.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TABLES 32

struct table_note {
    CUuuid id;
    CUresult answer;
    unsigned long long asked;
};

#define MAX_UNKNOWN 64

static struct table_note tables[MAX_TABLES];
static char *unknown_entries[MAX_UNKNOWN];
static int unknown_found[MAX_UNKNOWN];
static size_t unknown_count;
static size_t table_count;
static pthread_mutex_t tables_lock = PTHREAD_MUTEX_INITIALIZER;

void vgpu_note_export_table(const CUuuid *id, CUresult answer)
{
    pthread_mutex_lock(&tables_lock);
    size_t i = 0;
    while (i < table_count && memcmp(tables[i].id.bytes, id->bytes, sizeof id->bytes) != 0) {
        i++;
    }
    if (i == table_count && table_count < MAX_TABLES) {
        tables[table_count].id = *id;
        table_count++;
    }
    if (i < table_count) {
        tables[i].answer = answer;
        tables[i].asked++;
    }
    pthread_mutex_unlock(&tables_lock);
}

void vgpu_note_unknown_entry(const char *name, int driver_has_it)
{
    pthread_mutex_lock(&tables_lock);
    size_t i = 0;
    while (i < unknown_count && strcmp(unknown_entries[i], name) != 0) {
        i++;
    }
    if (i == unknown_count && unknown_count < MAX_UNKNOWN) {
        unknown_entries[unknown_count] = strdup(name);
        unknown_found[unknown_count] = driver_has_it;
        unknown_count += unknown_entries[unknown_count] != NULL;
    }
    pthread_mutex_unlock(&tables_lock);
}

void vgpu_table_id_text(const CUuuid *id, char text[37])
{
    const unsigned char *bytes = (const unsigned char *)id->bytes;
    size_t used = 0;
    for (size_t i = 0; i < sizeof id->bytes; i++) {
        used += (size_t)snprintf(text + used, 37 - used, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
                                 bytes[i]);
    }
}

static const char *disposition_word(enum vgpu_disposition disposition)
{
    switch (disposition) {
    case VGPU_SERVE:
        return "served";
    case VGPU_REFUSE:
        return "refused";
    case VGPU_PASS:
    default:
        return "passed";
    }
}

/* The report's path: name with each "%p" replaced by the process id. */
static int report_path(const char *name, char *path, size_t size)
{
    size_t used = 0;
    for (const char *c = name; *c != '\0'; c++) {
        int wrote = c[0] == '%' && c[1] == 'p' ? snprintf(path + used, size - used, "%ld", (long)getpid())
                                               : snprintf(path + used, size - used, "%c", *c);
        if (wrote < 0 || (size_t)wrote >= size - used) {
            return -1;
        }
        used += (size_t)wrote;
        c += c[0] == '%' && c[1] == 'p';
    }
    return 0;
}

__attribute__((destructor)) static void write_report(void)
{
    const char *name = getenv("VGPU_LIBCUDA_REPORT");
    if (name == NULL || name[0] == '\0') {
        return;
    }
    char path[4096];
    if (report_path(name, path, sizeof path) != 0) {
        vgpu_say("VGPU_LIBCUDA_REPORT=%s: the name is too long", name);
        return;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    FILE *out = fd < 0 ? NULL : fdopen(fd, "w");
    if (out == NULL) {
        vgpu_say("cannot write the report %s: %m", path);
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    fprintf(out, "# vgpu libcuda report of process %ld: entry point, the program's calls, what vgpu does with it,"
                 " microseconds its calls took (served in vgpu, or passed to the node's driver), how many of them vgpu made to the"
                 " node's driver itself (direct), the median microseconds of a call (within 9 %%; -1 when none was timed)\n",
            (long)getpid());
    for (int id = 0; id < VGPU_ENTRY_POINT_COUNT; id++) {
        unsigned long long calls = vgpu_calls(id);
        if (calls == 0) {
            continue;
        }
        const char *reason;
        enum vgpu_disposition disposition = vgpu_entry_disposition(id, &reason);
        double median = vgpu_median_call_nanos(id);
        fprintf(out, "%s\t%llu\t%s%s%s\t%.1f\t%llu\t%.2f\n", vgpu_entry_name(id), calls, disposition_word(disposition),
                reason[0] != '\0' ? ": " : "", reason, (double)vgpu_call_nanos(id) / 1000.0, vgpu_direct_calls(id),
                median < 0 ? -1.0 : median / 1000.0);
    }
    unsigned long long runtime_calls;
    unsigned long long requests = vgpu_in_process_requests(&runtime_calls);
    if (runtime_calls > 0) {
        /* asynchronous requests wait for the next one that is answered: fewer calls than requests */
        fprintf(out, "served-in-process\t%llu requests\t%llu calls into the runtime\n", requests, runtime_calls);
    }
    pthread_mutex_lock(&tables_lock);
    for (size_t i = 0; i < table_count; i++) {
        char id[37];
        vgpu_table_id_text(&tables[i].id, id);
        fprintf(out, "export-table %s\t%llu\t%s\n", id, tables[i].asked, tables[i].answer == CUDA_SUCCESS ? "answered" : "refused");
    }
    for (size_t i = 0; i < unknown_count; i++) {
        fprintf(out, "unknown-entry-point %s\t%s\n", unknown_entries[i],
                unknown_found[i] ? "handed out from the driver" : "the driver has none either");
    }
    pthread_mutex_unlock(&tables_lock);
    if (fclose(out) != 0) {
        vgpu_say("cannot write the report %s: %m", path);
    }
}
