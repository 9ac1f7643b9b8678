/*
 * What one request the library cannot answer itself costs, served by the launcher's local worker over its socket
 * against served by vgpu's runtime inside this process (VGPU_LIBCUDA_SERVING=in-process): run under `vgpu run`, it
 * starts itself twice, once each way (a program uses its vGPUs one way), and prints each one's microseconds per call
 * (the median of rounds of TRIPS calls) and their ratio:
 *
 *   serving_floor [TRIPS]     both ways, then "ratio in-process/socket"
 *   serving_floor --one       this process's way only (what each of the two runs)
 *
 * The calls: cuDeviceGetAttribute (the empty round trip: the worker answers from the device's properties and runs
 * nothing), cuCtxSynchronize (a round trip that waits for an idle vGPU), cuMemsetD8 on 4 bytes (a round trip that runs
 * something) and an asynchronous cuMemsetD8Async (a request with no answer). The first call's time includes
 * opening the vGPU (and, in process, starting the JVM): printed apart, with each process's largest resident memory.
 */
#include "driver_check.h"

#include <spawn.h>
#include <sys/resource.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define ROUNDS 5

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

enum call { ATTRIBUTE, SYNCHRONIZE, MEMSET, MEMSET_ASYNC, CALLS };

/* The median over ROUNDS of the microseconds one call of kind takes, TRIPS calls a round. */
static double per_call(enum call kind, CUdeviceptr memory, long trips)
{
    int warp = 0;
    double rounds[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double start = now_us();
        for (long k = 0; k < trips; k++) {
            switch (kind) {
            case ATTRIBUTE:
                CHECK(cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
                break;
            case SYNCHRONIZE:
                CHECK(cuCtxSynchronize());
                break;
            case MEMSET:
                CHECK(cuMemsetD8(memory, (unsigned char)k, 4));
                break;
            case MEMSET_ASYNC:
                CHECK(cuMemsetD8Async(memory, (unsigned char)k, 4, NULL));
                break;
            case CALLS:
                break;
            }
        }
        if (kind == MEMSET_ASYNC) {
            CHECK(cuCtxSynchronize());
        }
        rounds[r] = (now_us() - start) / (double)trips;
    }
    qsort(rounds, ROUNDS, sizeof rounds[0], by_value);
    return rounds[ROUNDS / 2];
}

static int one_way(long trips)
{
    double start = now_us();
    CHECK(cuInit(0));
    CUdevice device;
    CUcontext context;
    CHECK(cuDeviceGet(&device, 0));
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    CUdeviceptr memory;
    CHECK(cuMemAlloc(&memory, 4096));
    double opened = now_us() - start;
    for (int kind = 0; kind < CALLS; kind++) {
        per_call((enum call)kind, memory, trips); /* warm: the JIT compiles the serving path before it is timed */
    }
    for (int kind = 0; kind < CALLS; kind++) {
        printf("%.3f ", per_call((enum call)kind, memory, trips));
    }
    CHECK(cuMemFree(memory));
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("%.0f %ld\n", opened, usage.ru_maxrss);
    return 0;
}

/* Runs this program with --one and VGPU_LIBCUDA_SERVING=serving; its figures (each call's, the open's, its largest
   resident memory in KiB) into figures. */
static int run_one(const char *self, const char *serving, const char *trips, double figures[CALLS + 2])
{
    size_t count = 0;
    while (environ[count] != NULL) {
        count++;
    }
    char **environment = calloc(count + 2, sizeof *environment);
    char setting[64];
    snprintf(setting, sizeof setting, "VGPU_LIBCUDA_SERVING=%s", serving);
    size_t kept = 0;
    for (size_t k = 0; k < count; k++) {
        if (strncmp(environ[k], "VGPU_LIBCUDA_SERVING=", 21) != 0) {
            environment[kept++] = environ[k];
        }
    }
    environment[kept] = setting;
    int channel[2];
    if (environment == NULL || pipe(channel) != 0) {
        return -1;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, channel[1], 1);
    posix_spawn_file_actions_addclose(&actions, channel[0]);
    char *arguments[] = {(char *)self, (char *)"--one", (char *)trips, NULL};
    pid_t child;
    int spawned = posix_spawn(&child, self, &actions, NULL, arguments, environment);
    close(channel[1]);
    free(environment);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
        close(channel[0]);
        return -1;
    }
    char line[256] = {0};
    FILE *from = fdopen(channel[0], "r");
    int read = from != NULL && fgets(line, sizeof line, from) != NULL &&
               sscanf(line, "%lf %lf %lf %lf %lf %lf", &figures[0], &figures[1], &figures[2], &figures[3], &figures[4],
                      &figures[5]) == CALLS + 2;
    if (from != NULL) {
        fclose(from);
    }
    int status = 0;
    waitpid(child, &status, 0);
    return read && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    int one = argc > 1 && strcmp(argv[1], "--one") == 0;
    const char *trips_text = argc > 1 + one ? argv[1 + one] : "20000";
    long trips = strtol(trips_text, NULL, 10);
    if (trips <= 0) {
        fprintf(stderr, "serving_floor: TRIPS must be a positive number, got %s\n", trips_text);
        return 2;
    }
    if (one) {
        return one_way(trips);
    }
    double socket[CALLS + 2];
    double in_process[CALLS + 2];
    /* in process first: its JVM holds the job's vGPUs until it exits, while the launcher, once its local worker opened
       them for a session, holds them until the program as a whole ends */
    if (run_one(argv[0], "in-process", trips_text, in_process) != 0 ||
        run_one(argv[0], "socket", trips_text, socket) != 0) {
        fprintf(stderr, "serving_floor: a run failed (its own lines above say why); run it under vgpu run\n");
        return 1;
    }
    static const char *const names[CALLS] = {"empty_round_trip_us", "synchronize_us", "memset_4b_us",
                                             "memset_async_us"};
    printf("%-22s %12s %12s %8s\n", "call", "socket", "in-process", "ratio");
    for (int k = 0; k < CALLS; k++) {
        printf("%-22s %12.3f %12.3f %8.3f\n", names[k], socket[k], in_process[k], in_process[k] / socket[k]);
    }
    printf("%-22s %12.0f %12.0f\n", "first_open_us", socket[CALLS], in_process[CALLS]);
    printf("%-22s %12.0f %12.0f\n", "max_resident_kib", socket[CALLS + 1], in_process[CALLS + 1]);
    return 0;
}
