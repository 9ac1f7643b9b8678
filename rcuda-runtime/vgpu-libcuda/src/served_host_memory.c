/*
 * Served on a vGPU: page-locked host memory (cuMemHostAlloc, cuMemAllocHost). Where `vgpu run`'s launcher shares
 * host memory with the program (VGPU_HOST_REGIONS), each allocation is a region both map: the launcher makes a file
 * of its user's alone under a fresh random name, this library maps it, checks the nonce the launcher wrote into its
 * header page and unlinks it, and a copy between the region and a vGPU names the region, an offset and a length, so
 * no byte crosses the session's socket; the launcher has the region page-locked by the node's driver, so a native
 * vGPU copies it by DMA. Elsewhere (an older launcher, or one that shares none) it is ordinary host memory whose copies
 * go through the session. Either way kept in a list, so that cuMemFreeHost frees only what it handed out. Kernels
 * cannot read it through a device pointer (cuMemHostGetDevicePointer is refused): a remote vGPU cannot reach it.
 *
 * Memory the program allocated itself and registers (cuMemHostRegister, behind cudaHostRegister) is kept in the same
 * list, so that what a pointer into it is can be answered and its unregistering checked as the driver checks it; it
 * is not page-locked (no launcher shares it), so its copies go through the session, done when their call returns.
 */
#include "serving.h"
#include "contract.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The region file's first page: "VGHR", then the launcher's nonce at 8, both in the host's byte order. */
#define REGION_HEADER_BYTES 4096u
#define REGION_MAGIC 0x56474852u
#define REGION_NONCE_OFFSET 8u
#define PAGE_BYTES 4096u

struct host_block {
    void *address;
    size_t bytes;         /* regions: whole pages, all of which the launcher maps */
    void *mapping;        /* regions: the file's mapping, header page first; NULL: memory of this process alone */
    size_t mapping_bytes;
    uint32_t region;      /* regions: the launcher's id */
    struct vgpu_device *maker; /* regions: the session that asked for it, which frees it */
    uint64_t buffer_id;
    struct host_block *next;
    int registered; /* the program's own memory, registered: unregistered, never freed, here */
};

static struct host_block *host_blocks;
static pthread_mutex_t host_blocks_lock = PTHREAD_MUTEX_INITIALIZER;
/* The launcher answered that it shares no host memory after all: ask no more. */
static atomic_int regions_refused;
static atomic_int mapping_failure_said;

static int regions_offered(void)
{
    const char *bound = getenv(VGPU_ENV_HOST_REGIONS);
    return bound != NULL && bound[0] != '\0' && strcmp(bound, "0") != 0 && !atomic_load(&regions_refused);
}

/* The session a region is asked for on: the current vGPU's, or the first vGPU's before any is current. */
static struct vgpu_device *region_session(void)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    if (device == NULL && vgpu_get_current() == NULL && vgpu_device_at(0) != NULL &&
        vgpu_open_locking(vgpu_device_at(0)) == CUDA_SUCCESS) {
        device = vgpu_device_at(0);
    }
    return device;
}

static void free_region(struct vgpu_device *device, uint32_t region)
{
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_HOST_REGION_FREE);
    vgpu_put_u32(&request, region);
    vgpu_locked_call(device, &request, NULL);
}

/* Maps the file the launcher made for a region of bytes (whole pages): it must be a regular file of this user's,
   mode 600, of the region's size, holding nonce; unlinked once mapped. NULL, saying why once, when not. */
static void *map_region(const char *path, uint64_t nonce, size_t mapping_bytes)
{
    const char *why = NULL;
    void *mapping = MAP_FAILED;
    int fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    struct stat status;
    if (fd < 0 || fstat(fd, &status) != 0) {
        why = strerror(errno);
    } else if (!S_ISREG(status.st_mode) || status.st_uid != geteuid() || (status.st_mode & 07777) != 0600) {
        why = "not a regular file of this user's of mode 600";
    } else if ((uint64_t)status.st_size != mapping_bytes) {
        why = "not of the region's size";
    } else if (posix_fallocate(fd, 0, (off_t)mapping_bytes) != 0) {
        why = "no room for it in its filesystem"; /* else a page touched later would fault */
    } else if ((mapping = mmap(NULL, mapping_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        why = strerror(errno);
    } else {
        uint32_t magic;
        uint64_t found;
        memcpy(&magic, mapping, sizeof magic);
        memcpy(&found, (const uint8_t *)mapping + REGION_NONCE_OFFSET, sizeof found);
        if (magic != REGION_MAGIC || found != nonce) {
            why = "it holds another nonce than the launcher announced";
            munmap(mapping, mapping_bytes);
            mapping = MAP_FAILED;
        }
    }
    if (fd >= 0) {
        unlink(path);
        close(fd);
    }
    if (why != NULL && !atomic_exchange(&mapping_failure_said, 1)) {
        vgpu_say("page-locked memory shared with the launcher cannot be mapped from %s (%s): this program's page-locked"
                 " memory is its own, and its copies go through the session",
                 path, why);
    }
    return mapping == MAP_FAILED ? NULL : mapping;
}

/* A region the launcher shares, into block; CUDA_ERROR_NOT_SUPPORTED when none can be had (then the memory is the
   program's own), CUDA_ERROR_OUT_OF_MEMORY past the launcher's bound. */
static CUresult shared_region(struct host_block *block, size_t bytesize)
{
    struct vgpu_device *device = region_session();
    if (device == NULL || bytesize > SIZE_MAX - REGION_HEADER_BYTES - PAGE_BYTES) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    size_t pages = (bytesize + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
    struct vgpu_request request;
    vgpu_request_begin(&request, VGPU_OP_HOST_REGION_CREATE);
    vgpu_put_u64(&request, bytesize);
    struct vgpu_reply reply;
    CUresult result = vgpu_locked_call(device, &request, &reply);
    if (result == CUDA_ERROR_NOT_SUPPORTED) {
        atomic_store(&regions_refused, 1);
    }
    if (result == CUDA_ERROR_OUT_OF_MEMORY) {
        vgpu_say("cuMemHostAlloc of %zu bytes: the launcher's bound of page-locked memory shared with this program"
                 " (%s bytes) is reached",
                 bytesize, getenv(VGPU_ENV_HOST_REGIONS));
    }
    if (result != CUDA_SUCCESS) {
        return result;
    }
    uint32_t region = vgpu_get_u32(&reply);
    char path[4096];
    vgpu_get_string(&reply, path, sizeof path);
    uint64_t nonce = vgpu_get_u64(&reply);
    result = vgpu_reply_ok(&reply);
    vgpu_reply_free(&reply);
    if (result != CUDA_SUCCESS) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    void *mapping = map_region(path, nonce, REGION_HEADER_BYTES + pages);
    if (mapping == NULL) {
        free_region(device, region);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    *block = (struct host_block){(uint8_t *)mapping + REGION_HEADER_BYTES, pages, mapping,
                                 REGION_HEADER_BYTES + pages, region, device, 0, NULL, 0};
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (pp == NULL || bytesize == 0 ||
        (Flags & ~(unsigned int)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)) !=
            0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct host_block *block = malloc(sizeof *block);
    if (block == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult result = regions_offered() ? shared_region(block, bytesize) : CUDA_ERROR_NOT_SUPPORTED;
    if (result == CUDA_ERROR_NOT_SUPPORTED) {
        void *address = NULL;
        result = posix_memalign(&address, PAGE_BYTES, bytesize) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
        *block = (struct host_block){address, bytesize, NULL, 0, 0, NULL, 0, NULL, 0};
    }
    if (result != CUDA_SUCCESS) {
        free(block);
        return result;
    }
    block->buffer_id = vgpu_next_buffer_id();
    pthread_mutex_lock(&host_blocks_lock);
    block->next = host_blocks;
    host_blocks = block;
    pthread_mutex_unlock(&host_blocks_lock);
    *pp = block->address;
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
    while (*link != NULL && ((*link)->address != p || (*link)->registered)) {
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
    if (found->mapping != NULL) {
        free_region(found->maker, found->region); /* the launcher unmaps its side once no copy uses it */
        munmap(found->mapping, found->mapping_bytes);
    } else {
        free(found->address);
    }
    free(found);
    return CUDA_SUCCESS;
}

/* Whether a block holds any of bytes at address; with host_blocks_lock held. */
static int overlaps_a_block(uintptr_t address, size_t bytes)
{
    for (const struct host_block *block = host_blocks; block != NULL; block = block->next) {
        uintptr_t base = (uintptr_t)block->address;
        if (address < base + block->bytes && base < address + bytes) {
            return 1;
        }
    }
    return 0;
}

static atomic_int io_memory_refusal_said;

CUresult vgpu_served_cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                               CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
    if (p == NULL || bytesize == 0 || (Flags & ~known) != 0 || (uintptr_t)p > UINTPTR_MAX - bytesize) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((Flags & CU_MEMHOSTREGISTER_IOMEMORY) != 0) {
        if (!atomic_exchange(&io_memory_refusal_said, 1)) {
            vgpu_say("cuMemHostRegister of I/O memory (CU_MEMHOSTREGISTER_IOMEMORY) is refused on a vGPU: a device's"
                     " registers reach no GPU behind a vGPU");
        }
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    CUresult result = CUDA_SUCCESS;
    pthread_mutex_lock(&host_blocks_lock);
    if (overlaps_a_block((uintptr_t)p, bytesize)) {
        result = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED; /* as the driver, for any byte already registered */
    } else {
        struct host_block *block = malloc(sizeof *block);
        if (block == NULL) {
            result = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            *block = (struct host_block){.address = p, .bytes = bytesize, .buffer_id = vgpu_next_buffer_id(),
                                         .next = host_blocks, .registered = 1};
            host_blocks = block;
        }
    }
    pthread_mutex_unlock(&host_blocks_lock);
    return result;
}

CUresult vgpu_served_cuMemHostUnregister(void *p)
{
    pthread_mutex_lock(&host_blocks_lock);
    struct host_block **link = &host_blocks;
    while (*link != NULL && ((*link)->address != p || !(*link)->registered)) {
        link = &(*link)->next;
    }
    struct host_block *found = *link;
    if (found != NULL) {
        *link = found->next;
    }
    pthread_mutex_unlock(&host_blocks_lock);
    free(found);
    return found != NULL ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

/* The block that holds bytes at address (blocks never overlap), or NULL; with host_blocks_lock held. */
static const struct host_block *block_holding(uintptr_t address, size_t bytes)
{
    for (const struct host_block *block = host_blocks; block != NULL; block = block->next) {
        uintptr_t base = (uintptr_t)block->address;
        if (address >= base && address - base <= block->bytes && bytes <= block->bytes - (address - base)) {
            return block;
        }
    }
    return NULL;
}

int vgpu_host_region_at(const void *host, size_t bytes, uint32_t *region, uint64_t *offset)
{
    pthread_mutex_lock(&host_blocks_lock);
    const struct host_block *block = block_holding((uintptr_t)host, bytes);
    int found = block != NULL && block->mapping != NULL;
    if (found) {
        *region = block->region;
        *offset = (uintptr_t)host - (uintptr_t)block->address;
    }
    pthread_mutex_unlock(&host_blocks_lock);
    return found;
}

int vgpu_host_block_at(const void *host, uintptr_t *start, size_t *bytes, uint64_t *buffer_id)
{
    pthread_mutex_lock(&host_blocks_lock);
    const struct host_block *block = block_holding((uintptr_t)host, 1);
    if (block != NULL) {
        *start = (uintptr_t)block->address;
        *bytes = block->bytes;
        *buffer_id = block->buffer_id;
    }
    pthread_mutex_unlock(&host_blocks_lock);
    return block != NULL;
}
