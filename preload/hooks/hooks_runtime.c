/* SPDX-License-Identifier: MIT */
/* CUDA runtime API hooks, for programs that link libcudart dynamically
 * (PyTorch, JAX, most Python packages, `nvcc -cudart shared`). Each hook calls
 * the real function exactly once with the caller's arguments and returns
 * exactly what it returned; recording happens around the call.
 *
 * The allocation and release hooks come from two lists (below, and
 * hooks_runtime_async.inc for the stream-ordered ones), each row expanded
 * by one of two skeletons (runtime_hooks.h): what differs between two
 * allocation hooks is only the record, filled by the row's describe_NAME
 * from the call's arguments and result. */
#include <cuda_runtime_api.h>

#include "device_cache.h"
#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_device.h"
#include "runtime_hooks.h"
#include "torch_blocks.h"

static inline uint64_t ptr_out(cudaError_t r, void *const *p)
{
    return r == cudaSuccess && p ? (uint64_t)(uintptr_t)*p : 0;
}

/* An allocation whose record is its pointer, its size and flags (aux[0]). */
static CMT_ALWAYS_INLINE void describe_simple(struct cmt_alloc_record *a, uint8_t api, cudaError_t r, void *const *p,
                                              uint64_t size, int32_t device, uint64_t flags)
{
    *a = (struct cmt_alloc_record){
        .api = api,
        .kind = cmt_api_default_kind(api),
        .result = r,
        .device = device,
        .addr = ptr_out(r, p),
        .size = size,
        .aux = {flags},
    };
}

static CMT_ALWAYS_INLINE void describe_cudaMalloc(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                  void **devPtr, size_t size)
{
    describe_simple(a, CMT_API_CUDA_MALLOC, r, devPtr, size, cmt_runtime_device(real), 0);
}

static CMT_ALWAYS_INLINE void describe_cudaMallocManaged(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                         void **devPtr, size_t size, unsigned int flags)
{
    describe_simple(a, CMT_API_CUDA_MALLOC_MANAGED, r, devPtr, size, cmt_runtime_device(real), flags);
}

/* Host memory: no device. */
static CMT_ALWAYS_INLINE void describe_cudaMallocHost(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                      void **ptr, size_t size)
{
    (void)real;
    describe_simple(a, CMT_API_CUDA_MALLOC_HOST, r, ptr, size, -1, 0);
}

static CMT_ALWAYS_INLINE void describe_cudaHostAlloc(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                     void **pHost, size_t size, unsigned int flags)
{
    (void)real;
    describe_simple(a, CMT_API_CUDA_HOST_ALLOC, r, pHost, size, -1, flags);
}

/* The allocation is pitch x height; width x height is what the caller asked
 * for, the rest is padding (aux[1], for waste analysis). */
static CMT_ALWAYS_INLINE void describe_cudaMallocPitch(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                       void **devPtr, size_t *pitch, size_t width, size_t height)
{
    uint64_t granted = r == cudaSuccess && pitch ? (uint64_t)*pitch * height : (uint64_t)width * height;
    *a = (struct cmt_alloc_record){
        .api = CMT_API_CUDA_MALLOC_PITCH,
        .kind = CMT_KIND_DEVICE,
        .result = r,
        .device = cmt_runtime_device(real),
        .addr = ptr_out(r, devPtr),
        .size = granted,
        .aux = {0, (uint64_t)width * height},
    };
}

static CMT_ALWAYS_INLINE void describe_cudaMalloc3D(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                    struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    uint64_t rows = (uint64_t)(extent.height ? extent.height : 1) * (extent.depth ? extent.depth : 1);
    bool ok = r == cudaSuccess && pitchedDevPtr;
    *a = (struct cmt_alloc_record){
        .api = CMT_API_CUDA_MALLOC_3D,
        .kind = CMT_KIND_DEVICE,
        .result = r,
        .device = cmt_runtime_device(real),
        .addr = ok ? (uint64_t)(uintptr_t)pitchedDevPtr->ptr : 0,
        .size = ok ? (uint64_t)pitchedDevPtr->pitch * rows : (uint64_t)extent.width * rows,
        .aux = {0, (uint64_t)extent.width * rows},
    };
}

static uint64_t array_bytes(const struct cudaChannelFormatDesc *desc, size_t width, size_t height, size_t depth)
{
    uint64_t bits = 0;
    if (desc)
        bits = (uint64_t)(desc->x > 0 ? desc->x : 0) + (uint64_t)(desc->y > 0 ? desc->y : 0) +
               (uint64_t)(desc->z > 0 ? desc->z : 0) + (uint64_t)(desc->w > 0 ? desc->w : 0);
    return (bits + 7) / 8 * (uint64_t)width * (height ? height : 1) * (depth ? depth : 1);
}

static CMT_ALWAYS_INLINE void describe_cudaMallocArray(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                       cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                                       size_t width, size_t height, unsigned int flags)
{
    describe_simple(a, CMT_API_CUDA_MALLOC_ARRAY, r, (void *const *)array, array_bytes(desc, width, height, 0),
                    cmt_runtime_device(real), flags);
}

static CMT_ALWAYS_INLINE void describe_cudaMalloc3DArray(struct cmt_alloc_record *a, cudaError_t r, const void *real,
                                                         cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                                         struct cudaExtent extent, unsigned int flags)
{
    describe_simple(a, CMT_API_CUDA_MALLOC_3D_ARRAY, r, (void *const *)array,
                    array_bytes(desc, extent.width, extent.height, extent.depth), cmt_runtime_device(real), flags);
}

/* X(name, returned when no real function exists, may make a PyTorch segment, (parameters), (arguments)) */
#define CMT_RUNTIME_ALLOCATIONS(X)                                                                                \
    X(cudaMalloc, CMT_NO_REAL, true, (void **devPtr, size_t size), (devPtr, size))                               \
    X(cudaMallocManaged, CMT_NO_REAL, false, (void **devPtr, size_t size, unsigned int flags),                   \
      (devPtr, size, flags))                                                                                      \
    X(cudaMallocHost, CMT_NO_REAL, false, (void **ptr, size_t size), (ptr, size))                                \
    X(cudaHostAlloc, CMT_NO_REAL, false, (void **pHost, size_t size, unsigned int flags), (pHost, size, flags))  \
    X(cudaMallocPitch, CMT_NO_REAL, false, (void **devPtr, size_t *pitch, size_t width, size_t height),          \
      (devPtr, pitch, width, height))                                                                             \
    X(cudaMalloc3D, CMT_NO_REAL, false, (struct cudaPitchedPtr * pitchedDevPtr, struct cudaExtent extent),       \
      (pitchedDevPtr, extent))                                                                                    \
    X(cudaMallocArray, CMT_NO_REAL, false,                                                                        \
      (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,               \
       unsigned int flags),                                                                                       \
      (array, desc, width, height, flags))                                                                        \
    X(cudaMalloc3DArray, CMT_NO_REAL, false,                                                                      \
      (cudaArray_t * array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent, unsigned int flags), \
      (array, desc, extent, flags))

/* X(name, returned when no real function exists, API, (parameters), (arguments), pointer released, stream) */
#define CMT_RUNTIME_RELEASES(X)                                                                                   \
    X(cudaFree, CMT_NO_REAL, CMT_API_CUDA_FREE, (void *devPtr), (devPtr), devPtr, 0)                              \
    X(cudaFreeHost, CMT_NO_REAL, CMT_API_CUDA_FREE_HOST, (void *ptr), (ptr), ptr, 0)                              \
    X(cudaFreeArray, CMT_NO_REAL, CMT_API_CUDA_FREE_ARRAY, (cudaArray_t array), (array), array, 0)

CMT_RUNTIME_ALLOCATIONS(CMT_RUNTIME_ALLOCATION_HOOK)
CMT_RUNTIME_RELEASES(CMT_RUNTIME_RELEASE_HOOK)

/* Device selection: passed through, nothing recorded; the thread's
 * remembered device is forgotten (device_cache.h).
 * X(name, run after the call, (parameters), (arguments)) */
#define CMT_RUNTIME_DEVICE_SELECTIONS(X)                                                            \
    X(cudaSetDevice, cmt_device_cache_forget_thread, (int device), (device))                        \
    X(cudaSetValidDevices, cmt_device_cache_forget_thread, (int *device_arr, int len), (device_arr, len))

CMT_RUNTIME_DEVICE_SELECTIONS(CMT_RUNTIME_PASS_HOOK)

#include "hooks_runtime_async.inc"
