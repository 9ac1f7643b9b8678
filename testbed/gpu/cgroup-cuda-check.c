/*
 * A process that stays in a cgroup and answers, one line each, what it can do with the GPU right now
 * (testbed/gpu/cgroup-v2-grant.sh drives it through a FIFO). Commands on stdin, one per line:
 *   open PATH   "opened", or the error text of open(PATH, O_RDWR)
 *   init        cuInit and cuDeviceGetCount
 *   context     cuInit, cuDeviceGetCount, cuDeviceGet(0), cuCtxCreate, cuMemAlloc(1 MiB), each's result
 * CUDA is loaded with dlopen (no toolkit needed to build): gcc -O1 -o check cgroup-cuda-check.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_ctx_fn)(void **, unsigned, int);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_name_fn)(int, const char **);

static cu_init_fn cu_init;
static cu_count_fn cu_count;
static cu_get_fn cu_get;
static cu_ctx_fn cu_ctx;
static cu_alloc_fn cu_alloc;
static cu_name_fn cu_name;

static const char *name(int status)
{
    const char *text = "?";
    if (cu_name != NULL)
        cu_name(status, &text);
    return text;
}

int main(void)
{
    char line[4096];
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (cuda == NULL) {
        printf("no libcuda: %s\n", dlerror());
        return 2;
    }
    cu_init = (cu_init_fn)dlsym(cuda, "cuInit");
    cu_count = (cu_count_fn)dlsym(cuda, "cuDeviceGetCount");
    cu_get = (cu_get_fn)dlsym(cuda, "cuDeviceGet");
    cu_ctx = (cu_ctx_fn)dlsym(cuda, "cuCtxCreate_v2");
    cu_alloc = (cu_alloc_fn)dlsym(cuda, "cuMemAlloc_v2");
    cu_name = (cu_name_fn)dlsym(cuda, "cuGetErrorName");
    if (!cu_init || !cu_count || !cu_get || !cu_ctx || !cu_alloc) {
        printf("libcuda lacks a driver API entry point\n");
        return 2;
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "open ", 5) == 0) {
            int fd = open(line + 5, O_RDWR | O_CLOEXEC);
            printf("%s\n", fd < 0 ? strerror(errno) : "opened");
            if (fd >= 0)
                close(fd);
        } else if (strcmp(line, "init") == 0 || strcmp(line, "context") == 0) {
            int count = -1, device = -1;
            int init = cu_init(0);
            int counted = cu_count(&count);
            if (strcmp(line, "init") == 0) {
                printf("cuInit %s cuDeviceGetCount %s count=%d\n", name(init), name(counted), count);
                continue;
            }
            int got = cu_get(&device, 0);
            void *context = NULL;
            int made = got == 0 ? cu_ctx(&context, 0, device) : -1;
            unsigned long long pointer = 0;
            int allocated = made == 0 ? cu_alloc(&pointer, 1 << 20) : -1;
            printf("cuInit %s cuDeviceGetCount %s count=%d cuDeviceGet %s cuCtxCreate %s cuMemAlloc %s\n",
                   name(init), name(counted), count, name(got), made == -1 ? "not-tried" : name(made),
                   allocated == -1 ? "not-tried" : name(allocated));
        } else {
            printf("unknown command\n");
        }
    }
    return 0;
}
