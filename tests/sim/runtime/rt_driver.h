/* SPDX-License-Identifier: MIT */
#ifndef CUDART_SIM_DRIVER_H
#define CUDART_SIM_DRIVER_H

/* How the runtime reaches the driver: exactly NVIDIA's way, which is what a
 * profiler must intercept. dlopen("libcuda.so.1"), dlsym only
 * "cuGetProcAddress_v2", ask it for "cuGetProcAddress" itself (at 11030 for
 * the v1 ABI and 12000 for the v2 ABI), then fetch every entry point below
 * through the v2 pointer, each at the CUDA version that introduced the ABI
 * the runtime was written against (cuMemAlloc at 3020, cuMemAllocAsync at
 * 11020: the version in the name of its PFN_ typedef), the _ptsz/_ptds twins
 * with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM. NVIDIA's libcudart
 * asks this way (measured on an H200 with CUDA 13.0), not uniformly at its
 * own version. Nothing is ever called by name. */

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#define RT_DRIVER_VERSION 13000

/* X(field, base name, ABI version, PFN_ typedef suffix, cuGetProcAddress
 * flags). The field's type is PFN_<base>_v<version><suffix> from
 * cudaTypedefs.h, and the lookup asks for <base> at <version>, so the
 * pointer the driver returns has exactly the type the field declares. */
#define RT_PTDS CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
#define RT_DRIVER_ENTRY_POINTS(X)                                                   \
    X(cuInit, cuInit, 2000, , 0)                                                    \
    X(cuDriverGetVersion, cuDriverGetVersion, 2020, , 0)                            \
    X(cuDeviceGetCount, cuDeviceGetCount, 2000, , 0)                                \
    X(cuDeviceGetName, cuDeviceGetName, 2000, , 0)                                  \
    X(cuDeviceTotalMem, cuDeviceTotalMem, 3020, , 0)                                \
    X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000, , 0)                        \
    X(cuDeviceGetUuid, cuDeviceGetUuid, 11040, , 0)                                 \
    X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000, , 0)                \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 11000, , 0)                 \
    X(cuCtxGetCurrent, cuCtxGetCurrent, 4000, , 0)                                  \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, , 0)                                  \
    X(cuCtxGetDevice, cuCtxGetDevice, 2000, , 0)                                    \
    X(cuCtxSynchronize, cuCtxSynchronize, 2000, , 0)                                \
    X(cuStreamCreate, cuStreamCreate, 2000, , 0)                                    \
    X(cuStreamDestroy, cuStreamDestroy, 4000, , 0)                                  \
    X(cuStreamSynchronize, cuStreamSynchronize, 2000, , 0)                          \
    X(cuStreamSynchronize_ptsz, cuStreamSynchronize, 7000, _ptsz, RT_PTDS)          \
    X(cuStreamQuery, cuStreamQuery, 2000, , 0)                                      \
    X(cuEventCreate, cuEventCreate, 2000, , 0)                                      \
    X(cuEventRecord, cuEventRecord, 2000, , 0)                                      \
    X(cuEventRecord_ptsz, cuEventRecord, 7000, _ptsz, RT_PTDS)                      \
    X(cuEventSynchronize, cuEventSynchronize, 2000, , 0)                            \
    X(cuEventElapsedTime, cuEventElapsedTime, 12080, , 0)                           \
    X(cuEventDestroy, cuEventDestroy, 4000, , 0)                                    \
    X(cuMemGetInfo, cuMemGetInfo, 3020, , 0)                                        \
    X(cuMemAlloc, cuMemAlloc, 3020, , 0)                                            \
    X(cuMemAllocPitch, cuMemAllocPitch, 3020, , 0)                                  \
    X(cuMemFree, cuMemFree, 3020, , 0)                                              \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, , 0)                              \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, , 0)                                    \
    X(cuMemFreeHost, cuMemFreeHost, 2000, , 0)                                      \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, , 0)                                 \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, _ptsz, RT_PTDS)                 \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, , 0)                                   \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, _ptsz, RT_PTDS)                   \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, , 0)                 \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, _ptsz, RT_PTDS) \
    X(cuMemPoolCreate, cuMemPoolCreate, 11020, , 0)                                 \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, , 0)                              \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 11000, , 0)                           \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, , 0)                          \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 11020, , 0)                               \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, , 0)                                 \
    X(cuMemPoolExportToShareableHandle, cuMemPoolExportToShareableHandle, 11020, , 0) \
    X(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle, 11020, , 0) \
    X(cuMemPoolExportPointer, cuMemPoolExportPointer, 11020, , 0)                   \
    X(cuMemPoolImportPointer, cuMemPoolImportPointer, 11020, , 0)                   \
    X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, 11020, , 0)                     \
    X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, 11020, , 0)                     \
    X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, 11020, , 0)             \
    X(cuDeviceGetMemPool, cuDeviceGetMemPool, 11020, , 0)                           \
    X(cuDeviceSetMemPool, cuDeviceSetMemPool, 11020, , 0)                           \
    X(cuArrayCreate, cuArrayCreate, 3020, , 0)                                      \
    X(cuArray3DCreate, cuArray3DCreate, 3020, , 0)                                  \
    X(cuArrayDestroy, cuArrayDestroy, 2000, , 0)                                    \
    X(cuMemcpy, cuMemcpy, 4000, , 0)                                                \
    X(cuMemcpy_ptds, cuMemcpy, 7000, _ptds, RT_PTDS)                                \
    X(cuMemcpyHtoD, cuMemcpyHtoD, 3020, , 0)                                        \
    X(cuMemcpyDtoH, cuMemcpyDtoH, 3020, , 0)                                        \
    X(cuMemcpyDtoD, cuMemcpyDtoD, 3020, , 0)                                        \
    X(cuMemcpyAsync, cuMemcpyAsync, 4000, , 0)                                      \
    X(cuMemcpyAsync_ptsz, cuMemcpyAsync, 7000, _ptsz, RT_PTDS)                      \
    X(cuMemsetD8, cuMemsetD8, 3020, , 0)                                            \
    X(cuMemsetD8_ptds, cuMemsetD8, 7000, _ptds, RT_PTDS)                            \
    X(cuMemsetD8Async, cuMemsetD8Async, 3020, , 0)                                  \
    X(cuMemsetD8Async_ptsz, cuMemsetD8Async, 7000, _ptsz, RT_PTDS)

#define RT_DECLARE_ENTRY(field, base, version, suffix, flags) PFN_##base##_v##version##suffix field;
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
