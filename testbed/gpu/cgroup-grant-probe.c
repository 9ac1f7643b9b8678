/*
 * Does a process that called cuInit while the cgroup refused a GPU's device file see that GPU once
 * the cgroup admits it? The answer decides how a GPU granted to a running job can be driven in the
 * job's own process. cgroup v2 only (the GPU machines run it): a device program
 * (BPF_PROG_TYPE_CGROUP_DEVICE) that refuses c 195:MINOR is attached to a fresh cgroup; a child moves
 * into it, and the program is detached at the points below. CUDA is loaded with dlopen, so the probe
 * builds without the toolkit.
 *
 *   phase A: child cuInit while refused; phase B: the same child after admission;
 *   phase C: a fresh child after admission (control);
 *   phase D: a child that initialised and made a context while admitted, then is refused again.
 *
 * Usage: cgroup-grant-probe MINOR   (run as root; prints one line per observation)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*cu_int_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_get_fn)(int *, int);
typedef int (*cu_ctx_fn)(void **, unsigned, int);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_err_fn)(int, const char **);

static cu_int_fn cuInit;
static cu_count_fn cuDeviceGetCount;
static cu_get_fn cuDeviceGet;
static cu_ctx_fn cuCtxCreate;
static cu_alloc_fn cuMemAlloc;
static cu_err_fn cuGetErrorName;

static const char *name(int status) {
    const char *text = "?";
    if (cuGetErrorName) cuGetErrorName(status, &text);
    return text;
}

static void load_cuda(void) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
    if (!cuda) { fprintf(stderr, "probe: no libcuda: %s\n", dlerror()); exit(2); }
    cuInit = (cu_int_fn) dlsym(cuda, "cuInit");
    cuDeviceGetCount = (cu_count_fn) dlsym(cuda, "cuDeviceGetCount");
    cuDeviceGet = (cu_get_fn) dlsym(cuda, "cuDeviceGet");
    cuCtxCreate = (cu_ctx_fn) dlsym(cuda, "cuCtxCreate_v2");
    cuMemAlloc = (cu_alloc_fn) dlsym(cuda, "cuMemAlloc_v2");
    cuGetErrorName = (cu_err_fn) dlsym(cuda, "cuGetErrorName");
}

static void observe(const char *phase, int make_context) {
    int count = -1, device = -1;
    int init = cuInit(0);
    int counted = cuDeviceGetCount(&count);
    printf("probe %s: cuInit %s, cuDeviceGetCount %s count=%d\n", phase, name(init), name(counted), count);
    if (!make_context) return;
    int got = cuDeviceGet(&device, 0);
    void *context = NULL;
    int made = got == 0 ? cuCtxCreate(&context, 0, device) : -1;
    unsigned long long pointer = 0;
    int allocated = made == 0 ? cuMemAlloc(&pointer, 1 << 20) : -1;
    printf("probe %s: cuDeviceGet(0) %s, cuCtxCreate %s, cuMemAlloc(1 MiB) %s\n", phase, name(got),
           made == -1 ? "not tried" : name(made), allocated == -1 ? "not tried" : name(allocated));
    fflush(stdout);
}

static long bpf(int command, union bpf_attr *attr) {
    return syscall(__NR_bpf, command, attr, sizeof(*attr));
}

/* A device program: refuse c 195:minor, allow everything else. */
static int load_program(int minor) {
    struct bpf_insn insns[] = {
        {.code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = 2, .src_reg = 1, .off = 4},   /* r2 = major */
        {.code = BPF_JMP | BPF_JNE | BPF_K, .dst_reg = 2, .off = 4, .imm = 195},
        {.code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = 3, .src_reg = 1, .off = 8},   /* r3 = minor */
        {.code = BPF_JMP | BPF_JNE | BPF_K, .dst_reg = 3, .off = 2, .imm = minor},
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT},
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 1},
        {.code = BPF_JMP | BPF_EXIT},
    };
    static char log[4096];
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
    attr.insns = (unsigned long) insns;
    attr.insn_cnt = sizeof insns / sizeof insns[0];
    attr.license = (unsigned long) "GPL";
    attr.log_buf = (unsigned long) log;
    attr.log_size = sizeof log;
    attr.log_level = 1;
    int fd = (int) bpf(BPF_PROG_LOAD, &attr);
    if (fd < 0) { fprintf(stderr, "probe: BPF_PROG_LOAD: %s %s\n", strerror(errno), log); exit(2); }
    return fd;
}

static void attach(int cgroup, int program, int on) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.target_fd = cgroup;
    attr.attach_bpf_fd = program;
    attr.attach_type = BPF_CGROUP_DEVICE;
    attr.attach_flags = on ? BPF_F_ALLOW_MULTI : 0;
    if (bpf(on ? BPF_PROG_ATTACH : BPF_PROG_DETACH, &attr) < 0) {
        fprintf(stderr, "probe: %s: %s\n", on ? "attach" : "detach", strerror(errno));
        exit(2);
    }
    printf("probe: device program %s (c 195:* refused by it while attached)\n", on ? "attached" : "detached");
    fflush(stdout);
}

static void join(const char *dir) {
    char path[512], pid[32];
    snprintf(path, sizeof path, "%s/cgroup.procs", dir);
    int fd = open(path, O_WRONLY);
    int n = snprintf(pid, sizeof pid, "%d", getpid());
    if (fd < 0 || write(fd, pid, n) != n) { fprintf(stderr, "probe: join %s: %s\n", path, strerror(errno)); exit(2); }
    close(fd);
}

static void open_device(const char *phase, int minor) {
    char path[64];
    snprintf(path, sizeof path, "/dev/nvidia%d", minor);
    int fd = open(path, O_RDWR);
    printf("probe %s: open %s: %s\n", phase, path, fd < 0 ? strerror(errno) : "opened");
    if (fd >= 0) close(fd);
}

/* Runs phases in a child: first before the parent's step (pipe), then after it. */
static pid_t child(const char *dir, int minor, int before[2], int after[2], const char *first, const char *second,
                   int context_first) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    join(dir);
    load_cuda();
    open_device(first, minor);
    observe(first, context_first);
    char byte = 1;
    if (write(before[1], &byte, 1) != 1 || read(after[0], &byte, 1) != 1) _exit(3);
    open_device(second, minor);
    observe(second, 1);
    _exit(0);
}

int main(int argc, char **argv) {
    int minor = argc > 1 ? atoi(argv[1]) : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *dir = "/sys/fs/cgroup/vgpu-grant-probe";
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) { fprintf(stderr, "probe: mkdir %s: %s\n", dir, strerror(errno)); return 2; }
    int cgroup = open(dir, O_RDONLY | O_DIRECTORY);
    int program = load_program(minor);
    int before[2], after[2];
    char byte;

    attach(cgroup, program, 1);
    if (pipe(before) || pipe(after)) return 2;
    pid_t a = child(dir, minor, before, after, "A (refused at cuInit)", "B (same process, after admission)", 1);
    if (read(before[0], &byte, 1) != 1) return 2;
    attach(cgroup, program, 0);
    if (write(after[1], &byte, 1) != 1) return 2;
    waitpid(a, NULL, 0);

    if (pipe(before) || pipe(after)) return 2;
    pid_t d = child(dir, minor, before, after, "C (fresh process, admitted)", "D (same process, refused again)", 1);
    if (read(before[0], &byte, 1) != 1) return 2;
    attach(cgroup, program, 1);
    if (write(after[1], &byte, 1) != 1) return 2;
    waitpid(d, NULL, 0);
    attach(cgroup, program, 0);
    rmdir(dir);
    return 0;
}
