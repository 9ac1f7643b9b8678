/* What the driver-API test programs share: their check of a driver call. */
#ifndef DRIVER_CHECK_H
#define DRIVER_CHECK_H
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

/* A driver call that must succeed: the program stops, naming it and the driver's error, when it does not. */
#define CHECK(call)                                                                                  \
    do {                                                                                             \
        CUresult status_ = (call);                                                                   \
        if (status_ != CUDA_SUCCESS) {                                                               \
            const char *name_ = "?";                                                                 \
            cuGetErrorName(status_, &name_);                                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, name_);                   \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)
#endif
