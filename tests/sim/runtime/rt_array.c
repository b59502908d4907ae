/* SPDX-License-Identifier: MIT */
/* CUDA arrays, through cuArrayCreate / cuArray3DCreate / cuArrayDestroy. */
#include <stdbool.h>
#include "rt_state.h"

/* A channel descriptor as a driver array format: one to four (not three)
 * channels of equal width, signed, unsigned or float. Other channel kinds
 * (normalised, block-compressed, video) are real but not simulated. */
static cudaError_t array_format(const struct cudaChannelFormatDesc *desc, CUarray_format *format, unsigned *channels)
{
    int widths[4] = {desc->x, desc->y, desc->z, desc->w};
    unsigned count = 0;
    while (count < 4 && widths[count] != 0)
        count++;
    for (unsigned c = count; c < 4; c++)
        if (widths[c] != 0)
            return cudaErrorInvalidChannelDescriptor;
    for (unsigned c = 1; c < count; c++)
        if (widths[c] != widths[0])
            return cudaErrorInvalidChannelDescriptor;
    if (count == 0 || count == 3)
        return cudaErrorInvalidChannelDescriptor;
    if (widths[0] != 8 && widths[0] != 16 && widths[0] != 32)
        return cudaErrorInvalidChannelDescriptor;
    *channels = count;
    switch (desc->f) {
    case cudaChannelFormatKindSigned:
        *format = widths[0] == 8 ? CU_AD_FORMAT_SIGNED_INT8 : widths[0] == 16 ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_SIGNED_INT32;
        break;
    case cudaChannelFormatKindUnsigned:
        *format = widths[0] == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : widths[0] == 16 ? CU_AD_FORMAT_UNSIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT32;
        break;
    case cudaChannelFormatKindFloat:
        if (widths[0] == 8)
            return cudaErrorInvalidChannelDescriptor;
        *format = widths[0] == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
        break;
    default:
        return cudaErrorNotSupported;
    }
    return cudaSuccess;
}

static cudaError_t __cudart_create_array(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
                                size_t depth, unsigned flags, bool three_d)
{
    if (!array || !desc)
        return rt_return(cudaErrorInvalidValue);
    CUarray_format format;
    unsigned channels;
    cudaError_t error = array_format(desc, &format, &channels);
    if (error == cudaSuccess)
        error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUarray handle;
    CUresult result;
    /* Flag values (surface load/store, texture gather, layered, ...) are
     * shared with CUDA_ARRAY3D_*; only cuArray3DCreate takes flags. */
    if (!three_d && flags == 0) {
        CUDA_ARRAY_DESCRIPTOR descriptor = {.Width = width, .Height = height, .Format = format, .NumChannels = channels};
        result = rt_driver.cuArrayCreate(&handle, &descriptor);
    } else {
        CUDA_ARRAY3D_DESCRIPTOR descriptor = {
            .Width = width, .Height = height, .Depth = depth, .Format = format, .NumChannels = channels, .Flags = flags};
        result = rt_driver.cuArray3DCreate(&handle, &descriptor);
    }
    if (result == CUDA_SUCCESS)
        *array = (cudaArray_t)handle;
    return rt_return_driver(result);
}

cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height, unsigned int flags)
{
    return __cudart_create_array(array, desc, width, height, 0, flags, false);
}

cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent, unsigned int flags)
{
    return __cudart_create_array(array, desc, extent.width, extent.height, extent.depth, flags, true);
}

cudaError_t cudaFreeArray(cudaArray_t array)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (!array)
        return cudaSuccess;
    return rt_return_driver(rt_driver.cuArrayDestroy((CUarray)array));
}

/* Pure bookkeeping, like NVIDIA's: no driver involved. */
struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f)
{
    return (struct cudaChannelFormatDesc){.x = x, .y = y, .z = z, .w = w, .f = f};
}
