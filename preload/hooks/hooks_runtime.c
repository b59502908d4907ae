/* SPDX-License-Identifier: MIT */
/* CUDA runtime API hooks, for programs that link libcudart dynamically
 * (PyTorch, JAX, most Python packages, `nvcc -cudart shared`). Each hook calls
 * the real function exactly once with the caller's arguments and returns
 * exactly what it returned; recording happens around the call. */
#include <cuda_runtime_api.h>

#include "device_cache.h"
#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_device.h"
#include "torch_blocks.h"

CMT_REAL_SLOT(cudaMalloc);
CMT_REAL_SLOT(cudaFree);
CMT_REAL_SLOT(cudaMallocManaged);
CMT_REAL_SLOT(cudaMallocHost);
CMT_REAL_SLOT(cudaHostAlloc);
CMT_REAL_SLOT(cudaFreeHost);
CMT_REAL_SLOT(cudaMallocPitch);
CMT_REAL_SLOT(cudaMalloc3D);
CMT_REAL_SLOT(cudaMallocArray);
CMT_REAL_SLOT(cudaMalloc3DArray);
CMT_REAL_SLOT(cudaFreeArray);
CMT_REAL_SLOT(cudaSetDevice);
CMT_REAL_SLOT(cudaSetValidDevices);

/* A symbol that cannot be found anywhere fails the call as a runtime that
 * cannot initialise does, rather than crashing the program. */
#define CMT_NO_REAL cudaErrorInitializationError

static inline uint64_t ptr_out(cudaError_t r, void *const *p)
{
    return r == cudaSuccess && p ? (uint64_t)(uintptr_t)*p : 0;
}

static cudaError_t record_simple_alloc(struct cmt_hook *h, uint8_t api, cudaError_t r, void *const *p,
                                       uint64_t size, int32_t device, uint64_t flags)
{
    struct cmt_alloc_record a = {
        .api = api,
        .kind = cmt_api_default_kind(api),
        .result = r,
        .device = device,
        .addr = ptr_out(r, p),
        .size = size,
        .aux = {flags},
    };
    cmt_record_alloc(h, &a);
    return r;
}

CMT_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    __typeof__(cudaMalloc) *real = CMT_REAL(cudaMalloc);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(devPtr, size);
    if (rec) {
        record_simple_alloc(&h, CMT_API_CUDA_MALLOC, r, devPtr, size, cmt_runtime_device((const void *)real), 0);
        if (r == cudaSuccess)
            cmt_torch_blocks_after_segment_call(__builtin_return_address(0));
    }
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaFree(void *devPtr)
{
    __typeof__(cudaFree) *real = CMT_REAL(cudaFree);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    /* cudaFree(NULL) releases nothing (programs call it to create the
     * context): not an event. */
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME) && devPtr;
    uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;
    cudaError_t r = real(devPtr);
    if (rec)
        cmt_record_free(&h, CMT_API_CUDA_FREE, ts, r, (uint64_t)(uintptr_t)devPtr, 0);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    __typeof__(cudaMallocManaged) *real = CMT_REAL(cudaMallocManaged);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(devPtr, size, flags);
    if (rec)
        record_simple_alloc(&h, CMT_API_CUDA_MALLOC_MANAGED, r, devPtr, size, cmt_runtime_device((const void *)real), flags);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    __typeof__(cudaMallocHost) *real = CMT_REAL(cudaMallocHost);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(ptr, size);
    if (rec)
        record_simple_alloc(&h, CMT_API_CUDA_MALLOC_HOST, r, ptr, size, -1, 0);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    __typeof__(cudaHostAlloc) *real = CMT_REAL(cudaHostAlloc);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(pHost, size, flags);
    if (rec)
        record_simple_alloc(&h, CMT_API_CUDA_HOST_ALLOC, r, pHost, size, -1, flags);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    __typeof__(cudaFreeHost) *real = CMT_REAL(cudaFreeHost);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME) && ptr;
    uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;
    cudaError_t r = real(ptr);
    if (rec)
        cmt_record_free(&h, CMT_API_CUDA_FREE_HOST, ts, r, (uint64_t)(uintptr_t)ptr, 0);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    __typeof__(cudaMallocPitch) *real = CMT_REAL(cudaMallocPitch);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(devPtr, pitch, width, height);
    if (rec) {
        /* The allocation is pitch x height; width x height is what the caller
         * asked for, the rest is padding (aux1, for waste analysis). */
        uint64_t granted = r == cudaSuccess && pitch ? (uint64_t)*pitch * height : (uint64_t)width * height;
        struct cmt_alloc_record a = {
            .api = CMT_API_CUDA_MALLOC_PITCH,
            .kind = CMT_KIND_DEVICE,
            .result = r,
            .device = cmt_runtime_device((const void *)real),
            .addr = ptr_out(r, devPtr),
            .size = granted,
            .aux = {0, (uint64_t)width * height},
        };
        cmt_record_alloc(&h, &a);
    }
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    __typeof__(cudaMalloc3D) *real = CMT_REAL(cudaMalloc3D);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(pitchedDevPtr, extent);
    if (rec) {
        uint64_t rows = (uint64_t)(extent.height ? extent.height : 1) * (extent.depth ? extent.depth : 1);
        bool ok = r == cudaSuccess && pitchedDevPtr;
        struct cmt_alloc_record a = {
            .api = CMT_API_CUDA_MALLOC_3D,
            .kind = CMT_KIND_DEVICE,
            .result = r,
            .device = cmt_runtime_device((const void *)real),
            .addr = ok ? (uint64_t)(uintptr_t)pitchedDevPtr->ptr : 0,
            .size = ok ? (uint64_t)pitchedDevPtr->pitch * rows : (uint64_t)extent.width * rows,
            .aux = {0, (uint64_t)extent.width * rows},
        };
        cmt_record_alloc(&h, &a);
    }
    cmt_hook_leave(&h);
    return r;
}

static uint64_t array_bytes(const struct cudaChannelFormatDesc *desc, size_t width, size_t height, size_t depth)
{
    uint64_t bits = 0;
    if (desc)
        bits = (uint64_t)(desc->x > 0 ? desc->x : 0) + (uint64_t)(desc->y > 0 ? desc->y : 0) +
               (uint64_t)(desc->z > 0 ? desc->z : 0) + (uint64_t)(desc->w > 0 ? desc->w : 0);
    return (bits + 7) / 8 * (uint64_t)width * (height ? height : 1) * (depth ? depth : 1);
}

CMT_EXPORT cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width,
                                       size_t height, unsigned int flags)
{
    __typeof__(cudaMallocArray) *real = CMT_REAL(cudaMallocArray);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(array, desc, width, height, flags);
    if (rec)
        record_simple_alloc(&h, CMT_API_CUDA_MALLOC_ARRAY, r, (void *const *)array,
                            array_bytes(desc, width, height, 0), cmt_runtime_device((const void *)real), flags);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                         struct cudaExtent extent, unsigned int flags)
{
    __typeof__(cudaMalloc3DArray) *real = CMT_REAL(cudaMalloc3DArray);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(array, desc, extent, flags);
    if (rec)
        record_simple_alloc(&h, CMT_API_CUDA_MALLOC_3D_ARRAY, r, (void *const *)array,
                            array_bytes(desc, extent.width, extent.height, extent.depth), cmt_runtime_device((const void *)real),
                            flags);
    cmt_hook_leave(&h);
    return r;
}

CMT_EXPORT cudaError_t cudaFreeArray(cudaArray_t array)
{
    __typeof__(cudaFreeArray) *real = CMT_REAL(cudaFreeArray);
    if (!real)
        return CMT_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME) && array;
    uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;
    cudaError_t r = real(array);
    if (rec)
        cmt_record_free(&h, CMT_API_CUDA_FREE_ARRAY, ts, r, (uint64_t)(uintptr_t)array, 0);
    cmt_hook_leave(&h);
    return r;
}
/* Device selection: passed through, nothing recorded; the thread's
 * remembered device is forgotten (device_cache.h). */
CMT_EXPORT cudaError_t cudaSetDevice(int device)
{
    __typeof__(cudaSetDevice) *real = CMT_REAL(cudaSetDevice);
    if (!real)
        return CMT_NO_REAL;
    cudaError_t r = real(device);
    cmt_device_cache_forget_thread();
    return r;
}

CMT_EXPORT cudaError_t cudaSetValidDevices(int *device_arr, int len)
{
    __typeof__(cudaSetValidDevices) *real = CMT_REAL(cudaSetValidDevices);
    if (!real)
        return CMT_NO_REAL;
    cudaError_t r = real(device_arr, len);
    cmt_device_cache_forget_thread();
    return r;
}

#include "hooks_runtime_async.inc"
