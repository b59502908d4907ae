/* SPDX-License-Identifier: MIT */
/* Stream-ordered allocation and memory pools. The _ptsz functions are what
 * code built with --default-stream per-thread calls; they reach the driver's
 * per-thread twins, fetched with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. */
#include <stdbool.h>
#include "rt_state.h"

static cudaError_t __cudart_malloc_async(PFN_cuMemAllocAsync_v11020 allocate, void **devPtr, size_t size, cudaStream_t stream)
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
    CUresult result = allocate(&ptr, size, (CUstream)stream);
    if (result == CUDA_SUCCESS)
        *devPtr = (void *)(uintptr_t)ptr;
    return rt_return_driver(result);
}

static cudaError_t __cudart_free_async(PFN_cuMemFreeAsync_v11020 release, void *devPtr, cudaStream_t stream)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    if (!devPtr)
        return cudaSuccess;
    return rt_return_driver(release((CUdeviceptr)(uintptr_t)devPtr, (CUstream)stream));
}

static cudaError_t __cudart_malloc_from_pool_async(PFN_cuMemAllocFromPoolAsync_v11020 allocate, void **ptr, size_t size, cudaMemPool_t memPool,
                                          cudaStream_t stream)
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
    CUdeviceptr dptr;
    CUresult result = allocate(&dptr, size, (CUmemoryPool)memPool, (CUstream)stream);
    if (result == CUDA_SUCCESS)
        *ptr = (void *)(uintptr_t)dptr;
    return rt_return_driver(result);
}

/* The driver's _ptsz twins have the same parameters; only the names differ. */

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    /* Loading first: the entry points are only known afterwards. */
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_malloc_async(rt_driver.cuMemAllocAsync, devPtr, size, hStream);
}

cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_malloc_async(rt_driver.cuMemAllocAsync_ptsz, devPtr, size, hStream);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_free_async(rt_driver.cuMemFreeAsync, devPtr, hStream);
}

cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error) : __cudart_free_async(rt_driver.cuMemFreeAsync_ptsz, devPtr, hStream);
}

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error)
                                : __cudart_malloc_from_pool_async(rt_driver.cuMemAllocFromPoolAsync, ptr, size, memPool, stream);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    cudaError_t error = rt_driver_load();
    return error != cudaSuccess ? rt_return(error)
                                : __cudart_malloc_from_pool_async(rt_driver.cuMemAllocFromPoolAsync_ptsz, ptr, size, memPool, stream);
}

/* The runtime's pool enums and structs mirror the driver's value for value. */
cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    if (!memPool || !poolProps)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUmemPoolProps props = {
        .allocType = (CUmemAllocationType)poolProps->allocType,
        .handleTypes = (CUmemAllocationHandleType)poolProps->handleTypes,
        .location = {.type = (CUmemLocationType)poolProps->location.type, .id = poolProps->location.id},
        .win32SecurityAttributes = poolProps->win32SecurityAttributes,
        .maxSize = poolProps->maxSize,
        .usage = poolProps->usage,
    };
    CUmemoryPool pool;
    CUresult result = rt_driver.cuMemPoolCreate(&pool, &props);
    if (result == CUDA_SUCCESS)
        *memPool = (cudaMemPool_t)pool;
    return rt_return_driver(result);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuMemPoolDestroy((CUmemoryPool)memPool));
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuMemPoolTrimTo((CUmemoryPool)memPool, minBytesToKeep));
}

static bool driver_attribute(enum cudaMemPoolAttr attr, CUmemPool_attribute *out)
{
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies: *out = CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES; return true;
    case cudaMemPoolReuseAllowOpportunistic: *out = CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC; return true;
    case cudaMemPoolReuseAllowInternalDependencies: *out = CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES; return true;
    case cudaMemPoolAttrReleaseThreshold: *out = CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; return true;
    case cudaMemPoolAttrReservedMemCurrent: *out = CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT; return true;
    case cudaMemPoolAttrReservedMemHigh: *out = CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH; return true;
    case cudaMemPoolAttrUsedMemCurrent: *out = CU_MEMPOOL_ATTR_USED_MEM_CURRENT; return true;
    case cudaMemPoolAttrUsedMemHigh: *out = CU_MEMPOOL_ATTR_USED_MEM_HIGH; return true;
    default: return false;
    }
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    CUmemPool_attribute driver_attr;
    if (!driver_attribute(attr, &driver_attr))
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuMemPoolGetAttribute((CUmemoryPool)memPool, driver_attr, value));
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    CUmemPool_attribute driver_attr;
    if (!driver_attribute(attr, &driver_attr))
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuMemPoolSetAttribute((CUmemoryPool)memPool, driver_attr, value));
}

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuDeviceGetDefaultMemPool((CUmemoryPool *)memPool, device));
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuDeviceGetMemPool((CUmemoryPool *)memPool, device));
}

cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuDeviceSetMemPool(device, (CUmemoryPool)memPool));
}

/* Sharing a pool between processes: the driver's calls (sim_pool.c), the
 * runtime's types being the driver's bytes. */
_Static_assert(sizeof(struct cudaMemPoolPtrExportData) == sizeof(CUmemPoolPtrExportData),
               "runtime and driver pointer export data agree");

cudaError_t cudaMemPoolExportToShareableHandle(void *shareableHandle, cudaMemPool_t memPool,
                                               enum cudaMemAllocationHandleType handleType, unsigned int flags)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(rt_driver.cuMemPoolExportToShareableHandle(
        shareableHandle, (CUmemoryPool)memPool, (CUmemAllocationHandleType)handleType, flags));
}

cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t *memPool, void *shareableHandle,
                                                 enum cudaMemAllocationHandleType handleType, unsigned int flags)
{
    if (!memPool)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUmemoryPool pool = NULL;
    CUresult r = rt_driver.cuMemPoolImportFromShareableHandle(&pool, shareableHandle,
                                                              (CUmemAllocationHandleType)handleType, flags);
    if (r == CUDA_SUCCESS)
        *memPool = (cudaMemPool_t)pool;
    return rt_return_driver(r);
}

cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *exportData, void *ptr)
{
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    return rt_return_driver(
        rt_driver.cuMemPoolExportPointer((CUmemPoolPtrExportData *)exportData, (CUdeviceptr)(uintptr_t)ptr));
}

cudaError_t cudaMemPoolImportPointer(void **ptr, cudaMemPool_t memPool, struct cudaMemPoolPtrExportData *exportData)
{
    if (!ptr)
        return rt_return(cudaErrorInvalidValue);
    cudaError_t error = rt_ensure_context();
    if (error != cudaSuccess)
        return rt_return(error);
    CUdeviceptr p = 0;
    CUresult r = rt_driver.cuMemPoolImportPointer(&p, (CUmemoryPool)memPool, (CUmemPoolPtrExportData *)exportData);
    if (r == CUDA_SUCCESS)
        *ptr = (void *)(uintptr_t)p;
    return rt_return_driver(r);
}
