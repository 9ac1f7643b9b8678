/* Served on a vGPU: the names and descriptions of CUDA's errors, as cuda.h gives them (errors.c). */
#include "serving.h"

static const struct vgpu_error_text *text_of(CUresult error)
{
    for (size_t i = 0; i < vgpu_error_text_count; i++) {
        if (vgpu_error_texts[i].code == (int)error) {
            return &vgpu_error_texts[i];
        }
    }
    return NULL;
}

CUresult vgpu_served_cuGetErrorName(CUresult error, const char **pStr)
{
    const struct vgpu_error_text *text = text_of(error);
    if (pStr == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = text != NULL ? text->name : NULL;
    return text != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult vgpu_served_cuGetErrorString(CUresult error, const char **pStr)
{
    const struct vgpu_error_text *text = text_of(error);
    if (pStr == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *pStr = text != NULL ? text->description : NULL;
    return text != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
