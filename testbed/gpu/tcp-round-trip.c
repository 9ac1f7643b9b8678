/*
 * The network's floor for a remote call: a 64-byte request and a 64-byte answer over loopback TCP between two
 * processes, in C, with TCP_NODELAY, the way vgpu's client and worker exchange a call and its reply. Two ways of
 * waiting for the answer, because the difference between them is what a runtime can win by spinning:
 *   blocking  read(2) sleeps until the bytes arrive (the kernel wakes the thread);
 *   spinning  the socket is non-blocking and read(2) is retried until the bytes arrive (no sleep, no wake-up).
 * Both ends wait the same way. Prints one line per way: "c-round-trip-<way>-us MEDIAN" (the median of TRIALS
 * trials of ITERATIONS round trips each, after as many warm-up trips), the format latency-ratios.sh reads.
 * Usage: tcp-round-trip [ITERATIONS [TRIALS]]   (defaults 20000, 7)
 * Build: cc -O2 -o tcp-round-trip testbed/gpu/tcp-round-trip.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MESSAGE_BYTES = 64, MAX_TRIALS = 101 };

static void die(const char *what)
{
    fprintf(stderr, "tcp-round-trip: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* Reads exactly MESSAGE_BYTES; with spin set the socket is non-blocking and EAGAIN is retried at once. */
static void read_message(int fd, char *buffer, int spin)
{
    size_t have = 0;
    while (have < MESSAGE_BYTES) {
        ssize_t n = read(fd, buffer + have, MESSAGE_BYTES - have);
        if (n > 0) {
            have += (size_t)n;
        } else if (n == 0) {
            fprintf(stderr, "tcp-round-trip: the peer closed the connection\n");
            exit(1);
        } else if (!(spin && (errno == EAGAIN || errno == EWOULDBLOCK)) && errno != EINTR) {
            die("read");
        }
    }
}

static void write_message(int fd, const char *buffer)
{
    size_t sent = 0;
    while (sent < MESSAGE_BYTES) {
        ssize_t n = write(fd, buffer + sent, MESSAGE_BYTES - sent);
        if (n > 0) {
            sent += (size_t)n;
        } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            die("write");
        }
    }
}

static void set_mode(int fd, int spin)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        die("TCP_NODELAY");
    }
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, spin ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) != 0) {
        die("fcntl");
    }
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One connection, one way of waiting: the child echoes, the parent measures; returns the median in µs. */
static double measure(int spin, long iterations, int trials)
{
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    if (listener < 0) {
        die("socket");
    }
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (struct sockaddr *)&address, length) != 0 || listen(listener, 1) != 0
        || getsockname(listener, (struct sockaddr *)&address, &length) != 0) {
        die("listen on loopback");
    }
    long total_trips = iterations * (trials + 1);
    pid_t echo = fork();
    if (echo < 0) {
        die("fork");
    }
    if (echo == 0) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) {
            die("accept");
        }
        set_mode(fd, spin);
        char buffer[MESSAGE_BYTES];
        for (long i = 0; i < total_trips; i++) {
            read_message(fd, buffer, spin);
            write_message(fd, buffer);
        }
        _exit(0);
    }
    close(listener);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&address, sizeof address) != 0) {
        die("connect");
    }
    set_mode(fd, spin);
    char buffer[MESSAGE_BYTES];
    memset(buffer, 'r', sizeof buffer);
    double per_trial[MAX_TRIALS];
    for (int trial = -1; trial < trials; trial++) { /* trial -1 warms up */
        double began = now_us();
        for (long i = 0; i < iterations; i++) {
            write_message(fd, buffer);
            read_message(fd, buffer, spin);
        }
        if (trial >= 0) {
            per_trial[trial] = (now_us() - began) / (double)iterations;
        }
    }
    close(fd);
    int status;
    if (waitpid(echo, &status, 0) != echo || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "tcp-round-trip: the echoing process failed\n");
        exit(1);
    }
    qsort(per_trial, (size_t)trials, sizeof per_trial[0], compare_doubles);
    return per_trial[trials / 2];
}

int main(int argc, char **argv)
{
    long iterations = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    long trials = argc > 2 ? strtol(argv[2], NULL, 10) : 7;
    if (argc > 3 || iterations < 1 || trials < 1 || trials > MAX_TRIALS) {
        fprintf(stderr, "usage: tcp-round-trip [ITERATIONS [TRIALS]]  (ITERATIONS >= 1, 1 <= TRIALS <= %d)\n",
                MAX_TRIALS);
        return 2;
    }
    printf("c-round-trip-blocking-us %.2f\n", measure(0, iterations, (int)trials));
    printf("c-round-trip-spinning-us %.2f\n", measure(1, iterations, (int)trials));
    return 0;
}
