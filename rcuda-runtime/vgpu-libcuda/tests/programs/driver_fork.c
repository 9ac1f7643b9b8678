/*
 * A program that forks after using CUDA, as a worker pool or a `system()` call does: the child's CUDA calls are
 * refused (CUDA cannot be used in a child forked after its parent initialised it), and the parent's go on as before.
 */
#include "driver_check.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    CHECK(cuInit(0));
    CUdevice device;
    CHECK(cuDeviceGet(&device, 0));
    CUcontext context;
    CHECK(cuDevicePrimaryCtxRetain(&context, device));
    CHECK(cuCtxSetCurrent(context));
    enum { COUNT = 1024 };
    unsigned int sent[COUNT], back[COUNT];
    for (unsigned int i = 0; i < COUNT; i++) {
        sent[i] = i * 2654435761u;
    }
    CUdeviceptr buffer;
    CHECK(cuMemAlloc(&buffer, sizeof sent));
    CHECK(cuMemcpyHtoD(buffer, sent, sizeof sent));
    fflush(stdout);

    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 1;
    }
    if (child == 0) {
        CUdeviceptr mine = 0;
        CUresult allocated = cuMemAlloc(&mine, 4096);
        CUresult copied = cuMemcpyDtoH(back, buffer, sizeof back);
        printf("child after fork: allocation %s, copy %s\n", allocated == CUDA_SUCCESS ? "served" : "refused",
               copied == CUDA_SUCCESS ? "served" : "refused");
        fflush(stdout);
        _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "the child did not end well (status %d)\n", status);
        return 1;
    }
    memset(back, 0, sizeof back);
    CHECK(cuMemcpyDtoH(back, buffer, sizeof back));
    printf("parent after the child: its copy back equal: %s\n", memcmp(sent, back, sizeof sent) == 0 ? "yes" : "no");
    CHECK(cuMemFree(buffer));
    printf("done\n");
    return 0;
}
