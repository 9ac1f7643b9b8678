/*
 * The node's own CUDA driver, loaded privately (RTLD_LOCAL | RTLD_DEEPBIND: its calls to its own
 * functions stay inside it and never come back through vgpu's), and never vgpu's library itself,
 * which the program's search path finds first by design. Where it is: VGPU_REAL_LIBCUDA, else the
 * places distributions install it.
 */
#include "libcuda_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const usual_places[] = {
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    "/usr/lib/libcuda.so.1",
};

static void *real_driver;
static char problem[512] = "not looked for yet";
static pthread_once_t looked = PTHREAD_ONCE_INIT;

static int same_file(const char *path, const struct stat *ours)
{
    struct stat candidate;
    return stat(path, &candidate) == 0 && candidate.st_dev == ours->st_dev && candidate.st_ino == ours->st_ino;
}

static void *open_driver(const char *path, const struct stat *ours, int *is_ours)
{
    *is_ours = ours != NULL && same_file(path, ours);
    if (*is_ours) {
        return NULL;
    }
    return dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
}

static void look_for_driver(void)
{
    Dl_info self;
    struct stat ours_storage;
    const struct stat *ours = NULL;
    if (dladdr((void *)&vgpu_real_driver, &self) != 0 && self.dli_fname != NULL && stat(self.dli_fname, &ours_storage) == 0) {
        ours = &ours_storage;
    }
    int is_ours = 0;
    const char *chosen = getenv("VGPU_REAL_LIBCUDA");
    if (chosen != NULL && chosen[0] != '\0') {
        if (chosen[0] != '/') {
            snprintf(problem, sizeof problem, "VGPU_REAL_LIBCUDA=%s is not an absolute path", chosen);
            return;
        }
        real_driver = open_driver(chosen, ours, &is_ours);
        if (real_driver == NULL) {
            snprintf(problem, sizeof problem, "VGPU_REAL_LIBCUDA=%s: %s", chosen,
                     is_ours ? "that is vgpu's own libcuda.so.1" : dlerror());
        }
        return;
    }
    for (size_t i = 0; i < sizeof usual_places / sizeof usual_places[0]; i++) {
        struct stat found;
        if (stat(usual_places[i], &found) != 0) {
            continue;
        }
        real_driver = open_driver(usual_places[i], ours, &is_ours);
        if (real_driver != NULL) {
            return;
        }
        if (!is_ours) {
            snprintf(problem, sizeof problem, "%s: %s", usual_places[i], dlerror());
            return;
        }
    }
    snprintf(problem, sizeof problem, "no NVIDIA driver on this machine (set VGPU_REAL_LIBCUDA to its libcuda.so.1)");
}

void *vgpu_real_driver(void)
{
    pthread_once(&looked, look_for_driver);
    return real_driver;
}

const char *vgpu_real_driver_problem(void)
{
    pthread_once(&looked, look_for_driver);
    return real_driver != NULL ? NULL : problem;
}

CUresult vgpu_unresolved(const char *symbol)
{
    const char *why = vgpu_real_driver_problem();
    if (why != NULL) {
        static int said; /* once: a program retries, and every call would say the same */
        if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) {
            vgpu_say("%s: no CUDA driver to pass it to: %s", symbol, why);
        }
        /* What NVIDIA's own stub library answers: without a driver nothing changes while the process runs, and a
         * caller must not take it for CUDA_ERROR_NO_DEVICE, which a device cgroup can turn into a GPU later. */
        return CUDA_ERROR_STUB_LIBRARY;
    }
    vgpu_say("%s: this node's CUDA driver does not have it", symbol);
    return CUDA_ERROR_NOT_FOUND;
}
