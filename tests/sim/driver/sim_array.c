/* SPDX-License-Identifier: MIT */
/* CUDA arrays: opaque handles whose bytes are charged to device memory.
 * Size: width * max(height,1) * max(depth,1) * element size, rounded up to
 * 512 bytes. The simulator has no texture layout to model beyond that. */
#include <stdlib.h>

#include "sim_release.h"

struct CUarray_st {
    uint64_t addr;
    CUDA_ARRAY3D_DESCRIPTOR descriptor;
};

/* Bytes per element, or 0 for formats the simulator does not size (block
 * compressed and video formats): those fail with CUDA_ERROR_NOT_SUPPORTED
 * rather than with a made-up size. */
static uint64_t element_bytes(CUarray_format format, unsigned channels)
{
    bool plain_channels = channels == 1 || channels == 2 || channels == 4;
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return plain_channels ? channels : 0;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return plain_channels ? 2u * channels : 0;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return plain_channels ? 4u * channels : 0;
    /* The channel count is part of these formats' names. */
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return channels == 1 ? 1 : 0;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
        return channels == 2 ? 2 : 0;
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return channels == 1 ? 2 : 0;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return channels == 4 ? 4 : 0;
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
        return channels == 2 ? 4 : 0;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return channels == 4 ? 8 : 0;
    default:
        return 0;
    }
}

static bool is_sized_format(CUarray_format format)
{
    return element_bytes(format, 4) || element_bytes(format, 2) || element_bytes(format, 1);
}

/* Multiplies without overflow; false on overflow. */
static bool multiply(uint64_t *total, uint64_t factor)
{
    if (factor && *total > UINT64_MAX / factor)
        return false;
    *total *= factor;
    return true;
}

static CUresult create_array(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *descriptor)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    if (!pHandle || descriptor->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!is_sized_format(descriptor->Format))
        return CUDA_ERROR_NOT_SUPPORTED;
    uint64_t bytes = element_bytes(descriptor->Format, descriptor->NumChannels);
    if (bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!multiply(&bytes, descriptor->Width) || !multiply(&bytes, descriptor->Height ? descriptor->Height : 1) ||
        !multiply(&bytes, descriptor->Depth ? descriptor->Depth : 1) || bytes > UINT64_MAX - SIM_ALLOC_GRANULE)
        return CUDA_ERROR_OUT_OF_MEMORY;
    bytes = sim_round_up(bytes, SIM_ALLOC_GRANULE);

    struct CUarray_st *array = malloc(sizeof *array);
    if (!array)
        return CUDA_ERROR_OUT_OF_MEMORY;
    array->descriptor = *descriptor;
    int device;
    sim_lock();
    result = sim_current_device(&device);
    if (result == CUDA_SUCCESS)
        result = sim_device_take(&sim.devices[device], SIM_USE_ARRAY, bytes, &array->addr);
    if (result == CUDA_SUCCESS) {
        result = sim_register(SIM_OBJ_ARRAY, (uint64_t)(uintptr_t)array, bytes, array, device);
        if (result != CUDA_SUCCESS)
            sim_device_give_back(&sim.devices[device], SIM_USE_ARRAY, array->addr, bytes);
    }
    sim_unlock();
    if (result == CUDA_SUCCESS)
        *pHandle = array;
    else
        free(array);
    return result;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR descriptor = {
        .Width = pAllocateArray->Width,
        .Height = pAllocateArray->Height,
        .Depth = 0,
        .Format = pAllocateArray->Format,
        .NumChannels = pAllocateArray->NumChannels,
        .Flags = 0,
    };
    return create_array(pHandle, &descriptor);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    if (!pAllocateArray)
        return CUDA_ERROR_INVALID_VALUE;
    return create_array(pHandle, pAllocateArray);
}

void sim_array_release(struct sim_object *object)
{
    struct CUarray_st *array = object->data;
    sim_device_give_back(&sim.devices[object->device], SIM_USE_ARRAY, array->addr, object->size);
    free(array);
    sim_table_remove(&sim.objects, object);
}

CUresult cuArrayDestroy(CUarray hArray)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)hArray, SIM_OBJ_ARRAY);
    if (object)
        sim_array_release(object);
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

static CUresult describe(CUarray hArray, CUDA_ARRAY3D_DESCRIPTOR *out)
{
    CUresult result = sim_check_initialized();
    if (result != CUDA_SUCCESS)
        return result;
    sim_lock();
    struct sim_object *object = sim_table_find(&sim.objects, (uint64_t)(uintptr_t)hArray, SIM_OBJ_ARRAY);
    if (object)
        *out = ((struct CUarray_st *)object->data)->descriptor;
    else
        result = CUDA_ERROR_INVALID_HANDLE;
    sim_unlock();
    return result;
}

CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    return describe(hArray, pArrayDescriptor);
}

CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    if (!pArrayDescriptor)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR descriptor;
    CUresult result = describe(hArray, &descriptor);
    if (result == CUDA_SUCCESS) {
        pArrayDescriptor->Width = descriptor.Width;
        pArrayDescriptor->Height = descriptor.Height;
        pArrayDescriptor->Format = descriptor.Format;
        pArrayDescriptor->NumChannels = descriptor.NumChannels;
    }
    return result;
}
