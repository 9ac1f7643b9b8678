/*
 * Served on a vGPU: page-locked host memory (cuMemHostAlloc, cuMemAllocHost). Copies to and from a vGPU go through
 * its session whatever the host memory, so this is ordinary host memory, kept in a list so that cuMemFreeHost
 * frees only what it handed out. Kernels cannot read it through a device pointer (cuMemHostGetDevicePointer is
 * refused): a remote vGPU cannot reach the program's memory.
 */
#include "serving.h"

#include <pthread.h>
#include <stdlib.h>

struct host_block {
    void *address;
    struct host_block *next;
};

static struct host_block *host_blocks;
static pthread_mutex_t host_blocks_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult vgpu_served_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (pp == NULL || bytesize == 0 ||
        (Flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) !=
            0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct host_block *block = malloc(sizeof *block);
    void *address = NULL;
    if (block == NULL || posix_memalign(&address, 4096, bytesize) != 0) {
        free(block);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&host_blocks_lock);
    *block = (struct host_block){address, host_blocks};
    host_blocks = block;
    pthread_mutex_unlock(&host_blocks_lock);
    *pp = address;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuMemAllocHost(void **pp, size_t bytesize)
{
    return vgpu_served_cuMemHostAlloc(pp, bytesize, 0);
}

CUresult vgpu_served_cuMemFreeHost(void *p)
{
    pthread_mutex_lock(&host_blocks_lock);
    struct host_block **link = &host_blocks;
    while (*link != NULL && (*link)->address != p) {
        link = &(*link)->next;
    }
    struct host_block *found = *link;
    if (found != NULL) {
        *link = found->next;
    }
    pthread_mutex_unlock(&host_blocks_lock);
    if (found == NULL) {
        return CUDA_ERROR_INVALID_VALUE; /* as the driver: only what cuMemHostAlloc gave */
    }
    free(found->address);
    free(found);
    return CUDA_SUCCESS;
}
