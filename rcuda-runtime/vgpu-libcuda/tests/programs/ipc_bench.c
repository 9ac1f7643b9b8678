/*
 * What crossing from a CUDA program to another process on the same node costs, in microseconds per
 * round trip (median of rounds): a 64-byte request and reply over a Unix domain socket, and over a
 * shared-memory ring with both sides spinning. The costs behind the choice of where the library
 * meets vgpu's Java runtime (README.md).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 7
#define TRIPS 20000

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double socket_round_trip(void)
{
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair) != 0) {
        perror("socketpair");
        exit(1);
    }
    char message[64] = {0};
    pid_t child = fork();
    if (child == 0) {
        close(pair[0]);
        for (int i = 0; i < ROUNDS * TRIPS; i++) {
            if (read(pair[1], message, sizeof message) != sizeof message ||
                write(pair[1], message, sizeof message) != sizeof message) {
                _exit(1);
            }
        }
        _exit(0);
    }
    close(pair[1]);
    double results[ROUNDS];
    for (int round = 0; round < ROUNDS; round++) {
        double start = now_us();
        for (int i = 0; i < TRIPS; i++) {
            if (write(pair[0], message, sizeof message) != sizeof message ||
                read(pair[0], message, sizeof message) != sizeof message) {
                exit(1);
            }
        }
        results[round] = (now_us() - start) / TRIPS;
    }
    waitpid(child, NULL, 0);
    qsort(results, ROUNDS, sizeof results[0], by_value);
    return results[ROUNDS / 2];
}

struct ring {
    _Alignas(64) atomic_long request;
    _Alignas(64) atomic_long reply;
    char payload[64];
};

static double spinning_ring_round_trip(void)
{
    struct ring *ring = mmap(NULL, sizeof *ring, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (ring == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(ring, 0, sizeof *ring);
    pid_t child = fork();
    if (child == 0) {
        for (long i = 1; i <= ROUNDS * TRIPS; i++) {
            while (atomic_load_explicit(&ring->request, memory_order_acquire) != i) {
            }
            atomic_store_explicit(&ring->reply, i, memory_order_release);
        }
        _exit(0);
    }
    double results[ROUNDS];
    long sequence = 0;
    for (int round = 0; round < ROUNDS; round++) {
        double start = now_us();
        for (int i = 0; i < TRIPS; i++) {
            sequence++;
            atomic_store_explicit(&ring->request, sequence, memory_order_release);
            while (atomic_load_explicit(&ring->reply, memory_order_acquire) != sequence) {
            }
        }
        results[round] = (now_us() - start) / TRIPS;
    }
    waitpid(child, NULL, 0);
    qsort(results, ROUNDS, sizeof results[0], by_value);
    return results[ROUNDS / 2];
}

int main(void)
{
    printf("unix_socket_round_trip_us %.3f\n", socket_round_trip());
    printf("spinning_ring_round_trip_us %.3f\n", spinning_ring_round_trip());
    return 0;
}
