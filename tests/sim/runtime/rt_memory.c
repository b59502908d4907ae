/* SPDX-License-Identifier: MIT */
/* cudaMalloc and its relatives, each a thin layer over one driver call. */
#include <string.h>
#include "rt_errors.h"
#include "rt_state.h"

/* cudaMalloc* with zero bytes succeed with NULL, as NVIDIA's runtime does,
 * without troubling the driver (for which zero bytes is an error). */

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (!devPtr)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    CUdeviceptr ptr;
    CUresult result = rt_driver.cuMemAlloc(&ptr, size);
    if (result == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)ptr;
    return rt_return_driver(result);
}

/* cudaFree(NULL) succeeds, after creating the context: programs use it to
 * initialise CUDA. */
cudaError_t cudaFree(void *devPtr)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (!devPtr)
        return cudaSuccess;
    return rt_return_driver(rt_driver.cuMemFree((CUdeviceptr)(uintptr_t)devPtr));
}

/* Zero bytes is cudaErrorInvalidValue here, as documented. */
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (!devPtr)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUdeviceptr ptr;
    CUresult result = rt_driver.cuMemAllocManaged(&ptr, size, flags);
    if (result == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)ptr;
    return rt_return_driver(result);
}

/* NVIDIA's runtime implements both through cuMemHostAlloc (it never fetches
 * cuMemAllocHost), and so does this one. The flag values are shared. */
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (!pHost)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (size == 0) {
        *pHost = NULL;
        return cudaSuccess;
    }
    return rt_return_driver(rt_driver.cuMemHostAlloc(pHost, size, flags));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    if (!ptr)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (size == 0) {
        *ptr = NULL;
        return cudaSuccess;
    }
    return rt_return_driver(rt_driver.cuMemHostAlloc(ptr, size, 0));
}

cudaError_t cudaFreeHost(void *ptr)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (!ptr)
        return cudaSuccess;
    return rt_return_driver(rt_driver.cuMemFreeHost(ptr));
}

/* Pitched rows come from cuMemAllocPitch, which pads each to 512 bytes. The
 * element size only matters to real hardware's layout choices. */
static cudaError_t __cudart_allocate_pitched(void **devPtr, size_t *pitch, size_t width, size_t rows)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return error;
    if (width == 0 || rows == 0) {
        *devPtr = NULL;
        *pitch = 0;
        return cudaSuccess;
    }
    CUdeviceptr ptr;
    CUresult result = rt_driver.cuMemAllocPitch(&ptr, pitch, width, rows, 4);
    if (result == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)ptr;
    return rt_error_from_driver(result);
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    if (!devPtr || !pitch)
        return rt_return(cudaErrorInvalidValue);
    return rt_return(__cudart_allocate_pitched(devPtr, pitch, width, height));
}

/* One pitched allocation of height * depth rows. */
cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    if (!pitchedDevPtr)
        return rt_return(cudaErrorInvalidValue);
    if (extent.depth && extent.height > SIZE_MAX / extent.depth)
        return rt_return(cudaErrorMemoryAllocation);
    void *ptr = NULL;
    size_t pitch = 0;
    cudaError_t error = __cudart_allocate_pitched(&ptr, &pitch, extent.width, extent.height * extent.depth);
    if (error == cudaSuccess)
        *pitchedDevPtr = (struct cudaPitchedPtr){.ptr = ptr, .pitch = pitch, .xsize = extent.width, .ysize = extent.height};
    return rt_return(error);
}

cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuMemGetInfo(free, total));
}

/* CUDA IPC: the driver's calls (sim_ipc.c), handles converted as NVIDIA's
 * runtime does (the same 64 bytes). The driver's CUDA_ERROR_INVALID_CONTEXT
 * for a process opening its own handle reads cudaErrorDeviceUninitialized. */
_Static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(CUipcMemHandle), "runtime and driver IPC handles agree");

cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    if (!handle)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUipcMemHandle h;
    CUresult r = rt_driver.cuIpcGetMemHandle(&h, (CUdeviceptr)(uintptr_t)devPtr);
    if (r == CUDA_SUCCESS)
        memcpy(handle, &h, sizeof h);
    return rt_return_driver(r);
}

cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    if (!devPtr)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUipcMemHandle h;
    memcpy(&h, &handle, sizeof h);
    CUdeviceptr p = 0;
    CUresult r = rt_driver.cuIpcOpenMemHandle(&p, h, flags);
    if (r == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)p;
    return rt_return_driver(r);
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuIpcCloseMemHandle((CUdeviceptr)(uintptr_t)devPtr));
}
