/*
 * Served on a vGPU: libraries and their kernels (cuLibrary*, cuKernel*), through which the CUDA runtime loads a
 * program's fatbins. A library belongs to no context: its image is kept here and loaded as a module on each vGPU
 * where it is first used (as the driver's lazy loading does), and a kernel is the function of that name in the
 * module of the vGPU current at its use.
 */
#include "serving.h"
#include "contract.h"

#include <stdlib.h>
#include <string.h>

struct vgpu_library {
    struct vgpu_handle handle; /* first: the program's CUlibrary points here */
    uint8_t *image;
    size_t bytes;
    pthread_mutex_t lock;
    struct vgpu_handle *modules[VGPU_VGPUS_MAX]; /* by vGPU, loaded at the first use there */
};

struct vgpu_kernel {
    struct vgpu_handle handle; /* first: the program's CUkernel points here */
    struct vgpu_library *library;
    char *name;
    struct vgpu_handle *functions[VGPU_VGPUS_MAX]; /* by vGPU, found at the first use there */
};

static struct vgpu_library *library_of(CUlibrary handle)
{
    return (struct vgpu_library *)vgpu_handle(handle, VGPU_LIBRARY);
}

/* The library's module on device, loaded there at its first use. */
static CUresult module_on(struct vgpu_library *library, struct vgpu_device *device, struct vgpu_handle **module)
{
    pthread_mutex_lock(&library->lock);
    CUresult result = CUDA_SUCCESS;
    if (library->image == NULL) {
        result = CUDA_ERROR_INVALID_HANDLE; /* unloaded */
    } else if (library->modules[device->index] == NULL) {
        result = vgpu_load_module(device, library->image, library->bytes, &library->modules[device->index]);
    }
    *module = library->modules[device->index];
    pthread_mutex_unlock(&library->lock);
    return result;
}

static CUresult current_module(struct vgpu_library *library, struct vgpu_handle **module)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    return device == NULL ? result : module_on(library, device, module);
}

CUresult vgpu_served_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                       void **jitOptionsValues, unsigned int numJitOptions,
                                       CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                       unsigned int numLibraryOptions)
{
    /* the compiler's and the library's options are hints to the driver that loads it (the backend behind the vGPU
       loads the image with its own) */
    (void)jitOptions;
    (void)jitOptionsValues;
    (void)numJitOptions;
    (void)libraryOptions;
    (void)libraryOptionValues;
    (void)numLibraryOptions;
    if (library == NULL || code == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    size_t bytes = vgpu_image_bytes(&code);
    if (bytes == 0 || bytes > VGPU_WIRE_MAX_MODULE_IMAGE_BYTES) {
        return bytes == 0 ? CUDA_ERROR_INVALID_IMAGE : CUDA_ERROR_OUT_OF_MEMORY;
    }
    struct vgpu_library *loaded = calloc(1, sizeof *loaded);
    uint8_t *image = malloc(bytes);
    if (loaded == NULL || image == NULL) {
        free(loaded);
        free(image);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(image, code, bytes);
    loaded->handle =
        (struct vgpu_handle){VGPU_HANDLE_MAGIC, VGPU_LIBRARY, NULL, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    loaded->image = image;
    loaded->bytes = bytes;
    pthread_mutex_init(&loaded->lock, NULL);
    *library = (CUlibrary)loaded;
    return CUDA_SUCCESS;
}

CUresult vgpu_served_cuLibraryUnload(CUlibrary handle)
{
    struct vgpu_library *library = library_of(handle);
    if (library == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    pthread_mutex_lock(&library->lock);
    CUresult result = CUDA_SUCCESS;
    for (int k = 0; k < VGPU_VGPUS_MAX; k++) {
        if (library->modules[k] != NULL) {
            CUresult unloaded = vgpu_served_cuModuleUnload((CUmodule)library->modules[k]);
            result = result == CUDA_SUCCESS ? unloaded : result;
            library->modules[k] = NULL;
        }
    }
    free(library->image);
    library->image = NULL; /* the handle stays, refused from now on: its kernels may still be named */
    pthread_mutex_unlock(&library->lock);
    return result;
}

CUresult vgpu_served_cuLibraryGetModule(CUmodule *pMod, CUlibrary handle)
{
    struct vgpu_library *library = library_of(handle);
    if (pMod == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (library == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    return current_module(library, (struct vgpu_handle **)pMod);
}

CUresult vgpu_served_cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary handle, const char *name)
{
    struct vgpu_library *library = library_of(handle);
    if (library == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_handle *module = NULL;
    CUresult result = current_module(library, &module);
    return result != CUDA_SUCCESS ? result : vgpu_served_cuModuleGetGlobal(dptr, bytes, (CUmodule)module, name);
}

CUresult vgpu_served_cuLibraryGetKernel(CUkernel *pKernel, CUlibrary handle, const char *name)
{
    struct vgpu_library *library = library_of(handle);
    if (pKernel == NULL || name == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (library == NULL || library->image == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    struct vgpu_kernel *kernel = calloc(1, sizeof *kernel);
    char *copy = strdup(name);
    if (kernel == NULL || copy == NULL) {
        free(kernel);
        free(copy);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    kernel->handle = (struct vgpu_handle){VGPU_HANDLE_MAGIC, VGPU_KERNEL, NULL, 0, 0, NULL, -1, 0, 0, {0}, NULL};
    kernel->library = library;
    kernel->name = copy;
    *pKernel = (CUkernel)kernel;
    return CUDA_SUCCESS;
}

/* The kernel's function on device, found there at its first use. */
static CUresult kernel_function_on(struct vgpu_kernel *kernel, struct vgpu_device *device, struct vgpu_handle **function)
{
    struct vgpu_handle *found = __atomic_load_n(&kernel->functions[device->index], __ATOMIC_ACQUIRE);
    if (found == NULL) {
        struct vgpu_handle *module = NULL;
        CUresult result = module_on(kernel->library, device, &module);
        if (result == CUDA_SUCCESS) {
            result = vgpu_served_cuModuleGetFunction((CUfunction *)&found, (CUmodule)module, kernel->name);
        }
        if (result != CUDA_SUCCESS) {
            return result;
        }
        struct vgpu_handle *expected = NULL;
        if (!__atomic_compare_exchange_n(&kernel->functions[device->index], &expected, found, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_ACQUIRE)) {
            vgpu_free_handle(found); /* another thread found it first */
            found = expected;
        }
    }
    *function = found;
    return CUDA_SUCCESS;
}

/* The kernel's function on the current vGPU. */
static CUresult kernel_function(struct vgpu_kernel *kernel, struct vgpu_handle **function)
{
    CUresult result;
    struct vgpu_device *device = vgpu_current_device(&result);
    return device == NULL ? result : kernel_function_on(kernel, device, function);
}

CUresult vgpu_kernel_function_on(CUkernel handle, struct vgpu_device *device, struct vgpu_handle **function)
{
    struct vgpu_kernel *kernel = (struct vgpu_kernel *)vgpu_handle(handle, VGPU_KERNEL);
    return kernel == NULL ? CUDA_ERROR_INVALID_HANDLE : kernel_function_on(kernel, device, function);
}

CUresult vgpu_served_cuKernelGetFunction(CUfunction *pFunc, CUkernel handle)
{
    struct vgpu_kernel *kernel = (struct vgpu_kernel *)vgpu_handle(handle, VGPU_KERNEL);
    if (pFunc == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (kernel == NULL) {
        return CUDA_ERROR_INVALID_HANDLE;
    }
    return kernel_function(kernel, (struct vgpu_handle **)pFunc);
}

struct vgpu_handle *vgpu_launchable(const void *handle)
{
    struct vgpu_handle *function = vgpu_handle(handle, VGPU_FUNCTION);
    struct vgpu_kernel *kernel = (struct vgpu_kernel *)vgpu_handle(handle, VGPU_KERNEL);
    if (function == NULL && kernel != NULL && kernel_function(kernel, &function) != CUDA_SUCCESS) {
        function = NULL;
    }
    return function;
}
