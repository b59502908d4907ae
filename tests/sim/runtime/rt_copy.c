/* SPDX-License-Identifier: MIT */
/* Copies and memsets. With unified addressing every pointer says where it
 * lives, so the direction only picks the driver call. The _ptds/_ptsz
 * variants serve code built with --default-stream per-thread. */
#include "rt_state.h"

static cudaError_t __cudart_copy(PFN_cuMemcpy_v4000 unified, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUdeviceptr to = (CUdeviceptr)(uintptr_t)dst, from = (CUdeviceptr)(uintptr_t)src;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return rt_return_driver(rt_driver.cuMemcpyHtoD(to, src, count));
    case cudaMemcpyDeviceToHost:
        return rt_return_driver(rt_driver.cuMemcpyDtoH(dst, from, count));
    case cudaMemcpyDeviceToDevice:
        return rt_return_driver(rt_driver.cuMemcpyDtoD(to, from, count));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
        return rt_return_driver(unified(to, from, count));
    default:
        return rt_return(cudaErrorInvalidMemcpyDirection);
    }
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_copy(rt_driver.cuMemcpy, dst, src, count, kind);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_copy(rt_driver.cuMemcpy_ptds, dst, src, count, kind);
}

static cudaError_t __cudart_copy_async(PFN_cuMemcpyAsync_v4000 unified, void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                              cudaStream_t stream)
{
    if ((unsigned)kind > cudaMemcpyDefault)
        return rt_return(cudaErrorInvalidMemcpyDirection);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(unified((CUdeviceptr)(uintptr_t)dst, (CUdeviceptr)(uintptr_t)src, count, (CUstream)stream));
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_copy_async(rt_driver.cuMemcpyAsync, dst, src, count, kind, stream);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_copy_async(rt_driver.cuMemcpyAsync_ptsz, dst, src, count, kind, stream);
}

static cudaError_t __cudart_set(PFN_cuMemsetD8_v3020 fill, void *devPtr, int value, size_t count)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(fill((CUdeviceptr)(uintptr_t)devPtr, (unsigned char)value, count));
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_set(rt_driver.cuMemsetD8, devPtr, value, count);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_set(rt_driver.cuMemsetD8_ptds, devPtr, value, count);
}

static cudaError_t __cudart_set_async(PFN_cuMemsetD8Async_v3020 fill, void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(fill((CUdeviceptr)(uintptr_t)devPtr, (unsigned char)value, count, (CUstream)stream));
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_set_async(rt_driver.cuMemsetD8Async, devPtr, value, count, stream);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_set_async(rt_driver.cuMemsetD8Async_ptsz, devPtr, value, count, stream);
}
