/*
 * What a program's libraries call in the node driver's hidden tables, and with what: for finding out what
 * a slot vgpu does not serve yet means. Outside vgpu run, VGPU_LIBCUDA_TRACE_TABLES=ID[,ID...] (each the
 * start of a table's id as vgpu's lines print it, e.g. 21318c60) hands the program a copy of each such
 * table of the node's driver whose slots say each call: its first six integer arguments, its answer, and
 * the first words each argument that is an address of this process points to, before and after the call.
 *
 * Why six integer arguments: on x86-64 the first six integer or pointer arguments travel in registers, so a
 * slot called with at most that many (all the hidden tables' slots whose layout is publicly known) reaches
 * the driver unchanged through a function that takes six; one with more, or with floating-point
 * arguments, would not, and is not what this is for. Never used on a vGPU: there the tables are vgpu's own.
 */
#include "libcuda_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#define TRACED_TABLES 4
#define TRACED_SLOTS 128
#define CALLS_SAID_PER_SLOT 12
#define WORDS_SHOWN 8

typedef uintptr_t (*six_argument_slot)(uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t, uintptr_t);

struct traced_table {
    char id[37];
    six_argument_slot driver[TRACED_SLOTS];
    const void *copy[TRACED_SLOTS];
    unsigned said[TRACED_SLOTS];
};

static struct traced_table traced[TRACED_TABLES];
static size_t traced_count;

/* Reads WORDS_SHOWN words at an address without faulting when it is not one: the kernel answers EFAULT. */
static int peek(uintptr_t address, uint64_t words[WORDS_SHOWN])
{
    if (address < 4096) {
        return 0;
    }
    struct iovec local = {words, WORDS_SHOWN * sizeof(uint64_t)};
    struct iovec remote = {(void *)address, WORDS_SHOWN * sizeof(uint64_t)};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)local.iov_len;
}

/* A line being written: what is left of its buffer; text that does not fit is cut, never written past it. */
struct line {
    char *at;
    size_t left;
};

__attribute__((format(printf, 2, 3))) static void add(struct line *line, const char *format, ...)
{
    va_list arguments;
    va_start(arguments, format);
    int wrote = line->left > 0 ? vsnprintf(line->at, line->left, format, arguments) : 0;
    va_end(arguments);
    size_t used = wrote < 0 ? 0 : (size_t)wrote < line->left ? (size_t)wrote : line->left - 1;
    line->at += used;
    line->left -= used;
}

/* Where an address lies when it is in a loaded library: the library's file name and the offset into it. */
static void add_place(struct line *line, uintptr_t value)
{
    Dl_info info;
    if (value < 4096 || dladdr((void *)value, &info) == 0 || info.dli_fname == NULL) {
        return;
    }
    const char *file = strrchr(info.dli_fname, '/');
    add(line, "<%s+%#lx%s%s>", file != NULL ? file + 1 : info.dli_fname,
        (unsigned long)(value - (uintptr_t)info.dli_fbase), info.dli_sname != NULL ? " " : "",
        info.dli_sname != NULL ? info.dli_sname : "");
}

/* Each argument, where it lies, and the words it points to (and where those lie). */
static void describe(char *text, size_t size, const uintptr_t args[6])
{
    struct line line = {text, size};
    for (int i = 0; i < 6; i++) {
        uint64_t words[WORDS_SHOWN];
        add(&line, " a%d=%#lx", i, (unsigned long)args[i]);
        add_place(&line, args[i]);
        if (peek(args[i], words)) {
            for (int w = 0; w < WORDS_SHOWN; w++) {
                add(&line, "%s%#lx", w == 0 ? "[" : " ", (unsigned long)words[w]);
                add_place(&line, words[w]);
            }
            add(&line, "]");
        }
    }
}

static uintptr_t call_traced(unsigned table, unsigned slot, uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3,
                             uintptr_t a4, uintptr_t a5)
{
    struct traced_table *t = &traced[table];
    uintptr_t args[6] = {a0, a1, a2, a3, a4, a5};
    unsigned call = __atomic_fetch_add(&t->said[slot], 1, __ATOMIC_RELAXED) + 1;
    int say = call <= CALLS_SAID_PER_SLOT;
    char before[4096] = "";
    if (say) {
        describe(before, sizeof before, args);
    }
    uintptr_t answer = t->driver[slot](a0, a1, a2, a3, a4, a5);
    if (say) {
        char after[4096] = "";
        describe(after, sizeof after, args);
        /* Two lines: one line of vgpu's says at most about a kilobyte. */
        vgpu_say("node driver's table %s slot %u, call %u: before%s", t->id, slot, call, before);
        vgpu_say("node driver's table %s slot %u, call %u: answer %#lx; after%s", t->id, slot, call,
                 (unsigned long)answer, after);
    }
    return answer;
}

#define THUNK(table, slot)                                                                                       \
    static uintptr_t thunk_##table##_##slot(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3, uintptr_t a4, \
                                            uintptr_t a5)                                                        \
    {                                                                                                            \
        return call_traced(table, slot, a0, a1, a2, a3, a4, a5);                                                 \
    }
#define THUNKS_8(table, base)                                                                                    \
    THUNK(table, base##0) THUNK(table, base##1) THUNK(table, base##2) THUNK(table, base##3) THUNK(table, base##4) \
        THUNK(table, base##5) THUNK(table, base##6) THUNK(table, base##7)
#define NAMES_8(table, base)                                                                                     \
    thunk_##table##_##base##0, thunk_##table##_##base##1, thunk_##table##_##base##2, thunk_##table##_##base##3,     \
        thunk_##table##_##base##4, thunk_##table##_##base##5, thunk_##table##_##base##6, thunk_##table##_##base##7
/* Slots 0..127 of one table, written in octal so that eight thunks share a prefix. */
#define THUNKS_128(table)                                                                                        \
    THUNKS_8(table, 0) THUNKS_8(table, 01) THUNKS_8(table, 02) THUNKS_8(table, 03) THUNKS_8(table, 04)           \
        THUNKS_8(table, 05) THUNKS_8(table, 06) THUNKS_8(table, 07) THUNKS_8(table, 010) THUNKS_8(table, 011)    \
            THUNKS_8(table, 012) THUNKS_8(table, 013) THUNKS_8(table, 014) THUNKS_8(table, 015)                  \
                THUNKS_8(table, 016) THUNKS_8(table, 017)
#define NAMES_128(table)                                                                                         \
    {NAMES_8(table, 0),   NAMES_8(table, 01),  NAMES_8(table, 02),  NAMES_8(table, 03),  NAMES_8(table, 04),     \
     NAMES_8(table, 05),  NAMES_8(table, 06),  NAMES_8(table, 07),  NAMES_8(table, 010), NAMES_8(table, 011),    \
     NAMES_8(table, 012), NAMES_8(table, 013), NAMES_8(table, 014), NAMES_8(table, 015), NAMES_8(table, 016),    \
     NAMES_8(table, 017)}

THUNKS_128(0)
THUNKS_128(1)
THUNKS_128(2)
THUNKS_128(3)

static const six_argument_slot THUNKS[TRACED_TABLES][TRACED_SLOTS] = {NAMES_128(0), NAMES_128(1), NAMES_128(2),
                                                                       NAMES_128(3)};

static int asked_for(const char *id)
{
    const char *wanted = getenv("VGPU_LIBCUDA_TRACE_TABLES");
    if (wanted == NULL) {
        return 0;
    }
    for (const char *start = wanted; *start != '\0';) {
        size_t length = strcspn(start, ",");
        if (length > 0 && length <= strlen(id) && strncmp(start, id, length) == 0) {
            return 1;
        }
        start += length + (start[length] == ',');
    }
    return 0;
}

static pthread_mutex_t tracing_lock = PTHREAD_MUTEX_INITIALIZER;

static const void *trace_table(const char *text, const void *driver_table);

const void *vgpu_traced_table(const CUuuid *id, const void *driver_table)
{
    char text[37];
    vgpu_table_id_text(id, text);
    if (driver_table == NULL || !asked_for(text)) {
        return driver_table;
    }
    pthread_mutex_lock(&tracing_lock);
    const void *table = trace_table(text, driver_table);
    pthread_mutex_unlock(&tracing_lock);
    return table;
}

static const void *trace_table(const char *text, const void *driver_table)
{
    for (size_t i = 0; i < traced_count; i++) {
        if (strcmp(traced[i].id, text) == 0) {
            return traced[i].copy;
        }
    }
    if (traced_count == TRACED_TABLES) {
        vgpu_say("VGPU_LIBCUDA_TRACE_TABLES: at most %d tables are traced; %s is not", TRACED_TABLES, text);
        return driver_table;
    }
    /* Most tables begin with their own size in bytes; one that does not is traced over its first 32 slots. */
    const uintptr_t *slots = driver_table;
    int sized = slots[0] % sizeof(void *) == 0 && slots[0] / sizeof(void *) >= 2
                && slots[0] / sizeof(void *) <= TRACED_SLOTS;
    size_t count = sized ? slots[0] / sizeof(void *) : 32;
    struct traced_table *t = &traced[traced_count];
    memcpy(t->id, text, sizeof t->id);
    for (size_t s = 0; s < count; s++) {
        t->driver[s] = (six_argument_slot)slots[s];
        t->copy[s] = (s == 0 && sized) || slots[s] == 0 ? (const void *)slots[s] : (const void *)THUNKS[traced_count][s];
    }
    vgpu_say("tracing the node driver's table %s: %zu slots%s", text, count, sized ? "" : " (no size in slot 0)");
    traced_count++;
    return t->copy;
}
