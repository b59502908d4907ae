/* SPDX-License-Identifier: MIT */
#ifndef CUDART_SIM_DRIVER_H
#define CUDART_SIM_DRIVER_H

/* How the runtime reaches the driver: exactly NVIDIA's way, which is what a
 * profiler must intercept. dlopen("libcuda.so.1"), dlsym only
 * "cuGetProcAddress_v2", ask it for "cuGetProcAddress" itself (at 11030 for
 * the v1 ABI and 12000 for the v2 ABI), then fetch every entry point below
 * through the v2 pointer at cudaVersion 13000, the _ptsz twins with
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. Nothing is ever called by
 * name. */

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#define RT_DRIVER_VERSION 13000

/* X(field, base name, type at RT_DRIVER_VERSION, cuGetProcAddress flags) */
#define RT_PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define RT_DRIVER_ENTRY_POINTS(X)                                                          \
    X(cuInit, "cuInit", PFN_cuInit_v2000, 0)                                               \
    X(cuDriverGetVersion, "cuDriverGetVersion", PFN_cuDriverGetVersion_v2020, 0)           \
    X(cuDeviceGetCount, "cuDeviceGetCount", PFN_cuDeviceGetCount_v2000, 0)                 \
    X(cuDeviceGetName, "cuDeviceGetName", PFN_cuDeviceGetName_v2000, 0)                    \
    X(cuDeviceTotalMem, "cuDeviceTotalMem", PFN_cuDeviceTotalMem_v3020, 0)                 \
    X(cuDeviceGetAttribute, "cuDeviceGetAttribute", PFN_cuDeviceGetAttribute_v2000, 0)     \
    X(cuDeviceGetUuid, "cuDeviceGetUuid", PFN_cuDeviceGetUuid_v11040, 0)                   \
    X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", PFN_cuDevicePrimaryCtxRetain_v7000, 0) \
    X(cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", PFN_cuDevicePrimaryCtxReset_v11000, 0) \
    X(cuCtxGetCurrent, "cuCtxGetCurrent", PFN_cuCtxGetCurrent_v4000, 0)                    \
    X(cuCtxSetCurrent, "cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000, 0)                    \
    X(cuCtxGetDevice, "cuCtxGetDevice", PFN_cuCtxGetDevice_v2000, 0)                       \
    X(cuCtxSynchronize, "cuCtxSynchronize", PFN_cuCtxSynchronize_v2000, 0)                 \
    X(cuStreamCreate, "cuStreamCreate", PFN_cuStreamCreate_v2000, 0)                       \
    X(cuStreamDestroy, "cuStreamDestroy", PFN_cuStreamDestroy_v4000, 0)                    \
    X(cuStreamSynchronize, "cuStreamSynchronize", PFN_cuStreamSynchronize_v2000, 0)        \
    X(cuStreamSynchronize_ptsz, "cuStreamSynchronize", PFN_cuStreamSynchronize_v7000_ptsz, RT_PTDS) \
    X(cuStreamQuery, "cuStreamQuery", PFN_cuStreamQuery_v2000, 0)                          \
    X(cuEventCreate, "cuEventCreate", PFN_cuEventCreate_v2000, 0)                          \
    X(cuEventRecord, "cuEventRecord", PFN_cuEventRecord_v2000, 0)                          \
    X(cuEventRecord_ptsz, "cuEventRecord", PFN_cuEventRecord_v7000_ptsz, RT_PTDS)             \
    X(cuEventSynchronize, "cuEventSynchronize", PFN_cuEventSynchronize_v2000, 0)           \
    X(cuEventElapsedTime, "cuEventElapsedTime", PFN_cuEventElapsedTime_v12080, 0)          \
    X(cuEventDestroy, "cuEventDestroy", PFN_cuEventDestroy_v4000, 0)                       \
    X(cuMemGetInfo, "cuMemGetInfo", PFN_cuMemGetInfo_v3020, 0)                             \
    X(cuMemAlloc, "cuMemAlloc", PFN_cuMemAlloc_v3020, 0)                                   \
    X(cuMemAllocPitch, "cuMemAllocPitch", PFN_cuMemAllocPitch_v3020, 0)                    \
    X(cuMemFree, "cuMemFree", PFN_cuMemFree_v3020, 0)                                      \
    X(cuMemAllocManaged, "cuMemAllocManaged", PFN_cuMemAllocManaged_v6000, 0)              \
    X(cuMemHostAlloc, "cuMemHostAlloc", PFN_cuMemHostAlloc_v2020, 0)                       \
    X(cuMemFreeHost, "cuMemFreeHost", PFN_cuMemFreeHost_v2000, 0)                          \
    X(cuMemAllocAsync, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020, 0)                   \
    X(cuMemAllocAsync_ptsz, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020_ptsz, RT_PTDS)      \
    X(cuMemFreeAsync, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020, 0)                      \
    X(cuMemFreeAsync_ptsz, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020_ptsz, RT_PTDS)         \
    X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", PFN_cuMemAllocFromPoolAsync_v11020, 0) \
    X(cuMemAllocFromPoolAsync_ptsz, "cuMemAllocFromPoolAsync", PFN_cuMemAllocFromPoolAsync_v11020_ptsz, RT_PTDS) \
    X(cuMemPoolCreate, "cuMemPoolCreate", PFN_cuMemPoolCreate_v11020, 0)                   \
    X(cuMemPoolDestroy, "cuMemPoolDestroy", PFN_cuMemPoolDestroy_v11020, 0)                \
    X(cuMemPoolTrimTo, "cuMemPoolTrimTo", PFN_cuMemPoolTrimTo_v11020, 0)                   \
    X(cuMemPoolGetAttribute, "cuMemPoolGetAttribute", PFN_cuMemPoolGetAttribute_v11020, 0) \
    X(cuMemPoolSetAttribute, "cuMemPoolSetAttribute", PFN_cuMemPoolSetAttribute_v11020, 0) \
    X(cuDeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", PFN_cuDeviceGetDefaultMemPool_v11020, 0) \
    X(cuDeviceGetMemPool, "cuDeviceGetMemPool", PFN_cuDeviceGetMemPool_v11020, 0)          \
    X(cuDeviceSetMemPool, "cuDeviceSetMemPool", PFN_cuDeviceSetMemPool_v11020, 0)          \
    X(cuArrayCreate, "cuArrayCreate", PFN_cuArrayCreate_v3020, 0)                          \
    X(cuArray3DCreate, "cuArray3DCreate", PFN_cuArray3DCreate_v3020, 0)                    \
    X(cuArrayDestroy, "cuArrayDestroy", PFN_cuArrayDestroy_v2000, 0)                       \
    X(cuMemcpy, "cuMemcpy", PFN_cuMemcpy_v4000, 0)                                         \
    X(cuMemcpy_ptds, "cuMemcpy", PFN_cuMemcpy_v7000_ptds, RT_PTDS)                            \
    X(cuMemcpyHtoD, "cuMemcpyHtoD", PFN_cuMemcpyHtoD_v3020, 0)                             \
    X(cuMemcpyDtoH, "cuMemcpyDtoH", PFN_cuMemcpyDtoH_v3020, 0)                             \
    X(cuMemcpyDtoD, "cuMemcpyDtoD", PFN_cuMemcpyDtoD_v3020, 0)                             \
    X(cuMemcpyAsync, "cuMemcpyAsync", PFN_cuMemcpyAsync_v4000, 0)                          \
    X(cuMemcpyAsync_ptsz, "cuMemcpyAsync", PFN_cuMemcpyAsync_v7000_ptsz, RT_PTDS)             \
    X(cuMemsetD8, "cuMemsetD8", PFN_cuMemsetD8_v3020, 0)                                   \
    X(cuMemsetD8_ptds, "cuMemsetD8", PFN_cuMemsetD8_v7000_ptds, RT_PTDS)                      \
    X(cuMemsetD8Async, "cuMemsetD8Async", PFN_cuMemsetD8Async_v3020, 0)                    \
    X(cuMemsetD8Async_ptsz, "cuMemsetD8Async", PFN_cuMemsetD8Async_v7000_ptsz, RT_PTDS)

#define RT_DECLARE_ENTRY(field, symbol, type, flags) type field;
struct rt_driver {
    void *library;                                 /* the dlopen handle */
    PFN_cuGetProcAddress_v11030 get_proc_address_v1;
    PFN_cuGetProcAddress_v12000 get_proc_address;  /* fetches everything else */
    RT_DRIVER_ENTRY_POINTS(RT_DECLARE_ENTRY)
};
#undef RT_DECLARE_ENTRY

/* Filled by rt_driver_load; read-only afterwards. */
extern struct rt_driver rt_driver;

/* Loads the driver and fetches every entry point, once (pthread_once), then
 * runs cuInit(0) through it. Returns the same result on every call:
 * cudaErrorInsufficientDriver when there is no usable libcuda.so.1 or it is
 * older than 13.0, cudaErrorCallRequiresNewerDriver when an entry point is
 * missing, the mapped cuInit error otherwise. */
cudaError_t rt_driver_load(void);

/* A driver lookup for cudaGetDriverEntryPoint*, through the fetched v2
 * cuGetProcAddress (or the v1 one on a driver without v2). */
CUresult rt_driver_lookup(const char *symbol, void **pfn, int version, cuuint64_t flags, CUdriverProcAddressQueryResult *status);

#endif
