/*
 * The host's memory bandwidth as copies see it: 1, 2, 4, 8, 12 and 16 threads each memcpy their own 64 MiB buffer
 * (filled first, so its pages are there; far larger than the caches), started together; the best of 5 rounds, in
 * bytes copied per second (each byte read once and written once). What a bulk byte's copies in user space and in the
 * kernel share on their way through a remote vGPU.
 * Build: cc -O2 -pthread -o memcpy-bandwidth testbed/gpu/memcpy-bandwidth.c
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BUFFER_BYTES (64L << 20)
#define MAX_THREADS 16
#define ROUNDS 5

static pthread_barrier_t together;
static char *sources[MAX_THREADS];
static char *targets[MAX_THREADS];

static void *copy_one(void *arg) {
    long index = (long) arg;
    pthread_barrier_wait(&together);
    memcpy(targets[index], sources[index], BUFFER_BYTES);
    pthread_barrier_wait(&together);
    return NULL;
}

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double) now.tv_sec + (double) now.tv_nsec * 1e-9;
}

int main(void) {
    static const int counts[] = {1, 2, 4, 8, 12, MAX_THREADS};
    for (int i = 0; i < MAX_THREADS; i++) {
        sources[i] = malloc(BUFFER_BYTES);
        targets[i] = malloc(BUFFER_BYTES);
        if (sources[i] == NULL || targets[i] == NULL) {
            fprintf(stderr, "memcpy-bandwidth: cannot allocate %d buffers of %ld bytes\n", 2 * MAX_THREADS,
                    BUFFER_BYTES);
            return 2;
        }
        memset(sources[i], i + 1, BUFFER_BYTES);
        memset(targets[i], 0, BUFFER_BYTES);
    }
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int threads = counts[c];
        double best = 1e30;
        for (int round = 0; round < ROUNDS; round++) {
            pthread_t running[MAX_THREADS];
            pthread_barrier_init(&together, NULL, (unsigned) threads + 1);
            for (long t = 0; t < threads; t++) {
                if (pthread_create(&running[t], NULL, copy_one, (void *) t) != 0) {
                    fprintf(stderr, "memcpy-bandwidth: cannot start thread %ld\n", t);
                    return 2;
                }
            }
            pthread_barrier_wait(&together);
            double start = seconds();
            pthread_barrier_wait(&together);
            double elapsed = seconds() - start;
            for (int t = 0; t < threads; t++) {
                pthread_join(running[t], NULL);
            }
            pthread_barrier_destroy(&together);
            if (elapsed < best) {
                best = elapsed;
            }
        }
        printf("%2d threads: memcpy %.1f GB/s\n", threads, (double) threads * BUFFER_BYTES / best / 1e9);
    }
    return 0;
}
