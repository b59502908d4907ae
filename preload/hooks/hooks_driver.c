/* SPDX-License-Identifier: MIT */
/* CUDA driver API hooks: every allocation entry point of libcuda, each ABI
 * in two copies that differ only in what they forward to (driver_table.h):
 * the exported function (programs linked with -lcuda, dlsym by name) and the
 * one cuGetProcAddress hands out (NVIDIA's runtime, static or dynamic, and
 * everything else that asks the driver for its entry points). Each calls the
 * real function exactly once with the caller's arguments and returns exactly
 * its result. When the dynamic runtime's hook is already on this thread's
 * stack (cudaMalloc calling cuMemAlloc_v2), the thread-local depth makes the
 * driver hook pass through: one event per user call, named by the API the
 * user called.
 *
 * Compiled with __CUDA_API_VERSION_INTERNAL so cuda.h declares every ABI
 * under its own name (cuMemAlloc is the 32-bit v1, cuMemAlloc_v2 the one
 * hooked here, cuMemAllocAsync_ptsz the per-thread twin); each hook is
 * checked at compile time against the PFN_ typedef of cudaTypedefs.h whose
 * version the table gives cuGetProcAddress. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>

#include "array_bytes.h"
#include "call_hooks.h"
#include "device_cache.h"
#include "driver_device.h"
#include "driver_table.h"
#include "hook_record.h"
#include "torch_blocks.h"
#include "pool_hooks.h"
#include "real_symbols.h"
#include "sampler.h"
#include "shareable_handle.h"

/* A hook whose real function cannot be found (none anywhere: the shim was
 * preloaded into a program without a driver) answers as a driver that
 * cannot initialise does, rather than crashing the program. */
#define CMT_CU_NO_REAL CUDA_ERROR_NOT_INITIALIZED

static inline uint64_t dptr_out(CUresult r, const CUdeviceptr *p)
{
    return r == CUDA_SUCCESS && p ? (uint64_t)*p : 0;
}

static inline uint64_t hostptr_out(CUresult r, void *const *p)
{
    return r == CUDA_SUCCESS && p ? (uint64_t)(uintptr_t)*p : 0;
}

/* --- implementations, shared by both copies of each hook ---------------------
 * Each is a row of one of the lists below, expanded by a skeleton: what
 * differs between two hooks of a kind is only the record, filled by the
 * row's describe_IMPL (an allocation) or record_IMPL (pools, IPC) from the
 * call's arguments and result; a release's row names what it releases. */

/* An allocation: describe_IMPL(&record, result, real, arguments...) fills
 * the record, taken after the call (hook_record.h). */
#define CMT_DRIVER_ALLOCATION(impl, pfn, params, args)                  \
    static CUresult impl(pfn real, CMT_UNPAREN params)                  \
    {                                                                   \
        if (!real)                                                      \
            return CMT_CU_NO_REAL;                                      \
        struct cmt_hook h;                                              \
        bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);                \
        CUresult r = real args;                                         \
        if (rec) {                                                      \
            struct cmt_alloc_record a;                                  \
            describe_##impl(&a, r, (const void *)real, CMT_UNPAREN args); \
            cmt_record_alloc(&h, &a);                                   \
        }                                                               \
        cmt_hook_leave(&h);                                             \
        return r;                                                       \
    }

/* A release: the timestamp is taken before the real call (format.h). A
 * zero handle releases nothing and is not an event. size: the span
 * released when the API takes one, else 0. */
#define CMT_DRIVER_RELEASE(impl, pfn, params, args, api, value, size, stream)                      \
    static CUresult impl(pfn real, CMT_UNPAREN params)                                             \
    {                                                                                              \
        if (!real)                                                                                 \
            return CMT_CU_NO_REAL;                                                                 \
        struct cmt_hook h;                                                                         \
        bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER) && (value) != 0;                           \
        uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;                                            \
        CUresult r = real args;                                                                    \
        if (rec)                                                                                   \
            cmt_record_free_sized(&h, api, ts, (int32_t)r, (uint64_t)(value), size, stream);       \
        cmt_hook_leave(&h);                                                                        \
        return r;                                                                                  \
    }

/* A pool or IPC call recorded after it returns (call_hooks.h), when want
 * holds. */
#define CMT_DRIVER_CALL(impl, pfn, want, params, args)                                   \
    static CUresult impl(pfn real, CMT_UNPAREN params)                                   \
    {                                                                                    \
        if (!real)                                                                       \
            return CMT_CU_NO_REAL;                                                       \
        CMT_CALL_BODY_AFTER(CMT_LAYER_DRIVER, CUresult, real, want, record_##impl, args); \
    }

/* A pool destroyed or an IPC mapping closed: begin_IMPL before the call,
 * record_IMPL after it (call_hooks.h). */
#define CMT_DRIVER_GIVE_UP(impl, pfn, want, params, args)                                                  \
    static CUresult impl(pfn real, CMT_UNPAREN params)                                                     \
    {                                                                                                      \
        if (!real)                                                                                         \
            return CMT_CU_NO_REAL;                                                                         \
        CMT_CALL_BODY_AROUND(CMT_LAYER_DRIVER, CUresult, real, want, begin_##impl, record_##impl, args); \
    }

/* An allocation whose record is its address, size, stream and two aux
 * words. */
static CMT_ALWAYS_INLINE void describe(struct cmt_alloc_record *a, uint8_t api, CUresult r, int32_t device,
                                       uint64_t addr, uint64_t size, uint64_t stream, uint64_t aux0, uint64_t aux1)
{
    *a = (struct cmt_alloc_record){
        .api = api,
        .kind = cmt_api_default_kind(api),
        .result = (int32_t)r,
        .device = device,
        .addr = addr,
        .size = size,
        .stream = stream,
        .aux = {aux0, aux1},
    };
}

static CMT_ALWAYS_INLINE void describe_mem_alloc(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                 CUdeviceptr *dptr, size_t bytesize)
{
    describe(a, CMT_API_CU_MEM_ALLOC, r, cmt_driver_device(real), dptr_out(r, dptr), bytesize, 0, 0, 0);
}

/* Granted: pitch x height; asked for: width x height (aux1). */
static CMT_ALWAYS_INLINE void describe_mem_alloc_pitch(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                       CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                                       size_t Height, unsigned int ElementSizeBytes)
{
    (void)ElementSizeBytes;
    uint64_t asked = (uint64_t)WidthInBytes * Height;
    uint64_t granted = r == CUDA_SUCCESS && pPitch ? (uint64_t)*pPitch * Height : asked;
    describe(a, CMT_API_CU_MEM_ALLOC_PITCH, r, cmt_driver_device(real), dptr_out(r, dptr), granted, 0, 0, asked);
}

static CMT_ALWAYS_INLINE void describe_mem_alloc_managed(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                         CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    describe(a, CMT_API_CU_MEM_ALLOC_MANAGED, r, cmt_driver_device(real), dptr_out(r, dptr), bytesize, 0, flags, 0);
}

/* Host memory: no device. */
static CMT_ALWAYS_INLINE void describe_mem_alloc_host(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                      void **pp, size_t bytesize)
{
    (void)real;
    describe(a, CMT_API_CU_MEM_ALLOC_HOST, r, -1, hostptr_out(r, pp), bytesize, 0, 0, 0);
}

static CMT_ALWAYS_INLINE void describe_mem_host_alloc(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                      void **pp, size_t bytesize, unsigned int Flags)
{
    (void)real;
    describe(a, CMT_API_CU_MEM_HOST_ALLOC, r, -1, hostptr_out(r, pp), bytesize, 0, Flags, 0);
}

static CMT_ALWAYS_INLINE void describe_mem_alloc_async(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                       CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    describe(a, CMT_API_CU_MEM_ALLOC_ASYNC, r, cmt_driver_device(real), dptr_out(r, dptr), bytesize,
             (uint64_t)(uintptr_t)hStream, 0, 0);
}

static CMT_ALWAYS_INLINE void describe_mem_alloc_from_pool_async(struct cmt_alloc_record *a, CUresult r,
                                                                 const void *real, CUdeviceptr *dptr, size_t bytesize,
                                                                 CUmemoryPool pool, CUstream hStream)
{
    describe(a, CMT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, r, cmt_driver_device(real), dptr_out(r, dptr), bytesize,
             (uint64_t)(uintptr_t)hStream, (uint64_t)(uintptr_t)pool, 0);
}

/* The device is the physical handle's; the analyzer knows it from the
 * handle's cuMemCreate. The current context's stands in when it does not
 * (a handle created before tracing, or imported). */
static CMT_ALWAYS_INLINE void describe_mem_map(struct cmt_alloc_record *a, CUresult r, const void *real, CUdeviceptr ptr,
                                               size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                                               unsigned long long flags)
{
    (void)flags;
    describe(a, CMT_API_CU_MEM_MAP, r, cmt_driver_device(real), r == CUDA_SUCCESS ? ptr : 0, size, 0, handle, offset);
}

static CMT_ALWAYS_INLINE void describe_mem_address_reserve(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                           CUdeviceptr *ptr, size_t size, size_t alignment,
                                                           CUdeviceptr addr, unsigned long long flags)
{
    (void)flags;
    describe(a, CMT_API_CU_MEM_ADDRESS_RESERVE, r, cmt_driver_device(real), dptr_out(r, ptr), size, 0, alignment,
             addr);
}

static CMT_ALWAYS_INLINE void describe_array_create(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                    CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    uint64_t bytes = desc ? cmt_array_bytes(desc->Format, desc->NumChannels, desc->Width, desc->Height, 0) : 0;
    describe(a, CMT_API_CU_ARRAY_CREATE, r, cmt_driver_device(real), hostptr_out(r, (void *const *)pHandle), bytes, 0,
             desc ? (uint64_t)desc->Format : 0, desc ? desc->NumChannels : 0);
}

static CMT_ALWAYS_INLINE void describe_array_3d_create(struct cmt_alloc_record *a, CUresult r, const void *real,
                                                       CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    uint64_t bytes =
        desc ? cmt_array_bytes(desc->Format, desc->NumChannels, desc->Width, desc->Height, desc->Depth) : 0;
    describe(a, CMT_API_CU_ARRAY_3D_CREATE, r, cmt_driver_device(real), hostptr_out(r, (void *const *)pHandle), bytes,
             0, desc ? (uint64_t)desc->Format : 0, desc ? desc->NumChannels : 0);
}

/* X(implementation, its real function's type, (parameters), (arguments)) */
#define CMT_DRIVER_ALLOCATIONS(X)                                                                                  \
    X(mem_alloc, PFN_cuMemAlloc_v3020, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                   \
    X(mem_alloc_pitch, PFN_cuMemAllocPitch_v3020,                                                                 \
      (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes),   \
      (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                                     \
    X(mem_alloc_managed, PFN_cuMemAllocManaged_v6000, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),  \
      (dptr, bytesize, flags))                                                                                    \
    X(mem_alloc_host, PFN_cuMemAllocHost_v3020, (void **pp, size_t bytesize), (pp, bytesize))                     \
    X(mem_host_alloc, PFN_cuMemHostAlloc_v2020, (void **pp, size_t bytesize, unsigned int Flags),                 \
      (pp, bytesize, Flags))                                                                                      \
    X(mem_alloc_async, PFN_cuMemAllocAsync_v11020, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),       \
      (dptr, bytesize, hStream))                                                                                  \
    X(mem_alloc_from_pool_async, PFN_cuMemAllocFromPoolAsync_v11020,                                              \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), (dptr, bytesize, pool, hStream)) \
    X(mem_map, PFN_cuMemMap_v10020,                                                                               \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle, unsigned long long flags), \
      (ptr, size, offset, handle, flags))                                                                         \
    X(mem_address_reserve, PFN_cuMemAddressReserve_v10020,                                                        \
      (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags),             \
      (ptr, size, alignment, addr, flags))                                                                        \
    X(array_create, PFN_cuArrayCreate_v3020, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *desc),              \
      (pHandle, desc))                                                                                            \
    X(array_3d_create, PFN_cuArray3DCreate_v3020, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc),       \
      (pHandle, desc))

/* X(implementation, its real function's type, (parameters), (arguments), API, the handle released, the span
 * released, the stream). One unmap may remove several mappings: its event carries the whole span. */
#define CMT_DRIVER_RELEASES(X)                                                                                     \
    X(mem_free, PFN_cuMemFree_v3020, (CUdeviceptr dptr), (dptr), CMT_API_CU_MEM_FREE, dptr, 0, 0)                 \
    X(mem_free_host, PFN_cuMemFreeHost_v2000, (void *p), (p), CMT_API_CU_MEM_FREE_HOST, (uintptr_t)p, 0, 0)       \
    X(mem_free_async, PFN_cuMemFreeAsync_v11020, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream),           \
      CMT_API_CU_MEM_FREE_ASYNC, dptr, 0, (uint64_t)(uintptr_t)hStream)                                           \
    X(mem_release, PFN_cuMemRelease_v10020, (CUmemGenericAllocationHandle handle), (handle), CMT_API_CU_MEM_RELEASE, \
      handle, 0, 0)                                                                                               \
    X(mem_unmap, PFN_cuMemUnmap_v10020, (CUdeviceptr ptr, size_t size), (ptr, size), CMT_API_CU_MEM_UNMAP, ptr,   \
      size, 0)                                                                                                    \
    X(mem_address_free, PFN_cuMemAddressFree_v10020, (CUdeviceptr ptr, size_t size), (ptr, size),                 \
      CMT_API_CU_MEM_ADDRESS_FREE, ptr, size, 0)                                                                  \
    X(array_destroy, PFN_cuArrayDestroy_v2000, (CUarray hArray), (hArray), CMT_API_CU_ARRAY_DESTROY,              \
      (uintptr_t)hArray, 0, 0)

CMT_DRIVER_ALLOCATIONS(CMT_DRIVER_ALLOCATION)
CMT_DRIVER_RELEASES(CMT_DRIVER_RELEASE)

/* Physical memory lives where its properties say: on a device (its
 * ordinal), or on the host (-1, counted with pinned host memory). */
static int32_t physical_location(const CUmemAllocationProp *prop, const void *real)
{
    if (!prop)
        return cmt_driver_device(real);
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        return prop->location.id;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        return -1;
    default:
        return cmt_driver_device(real);
    }
}

/* The one allocation with something to do after its record: not a row. */
static CUresult mem_create(PFN_cuMemCreate_v10020 real, CUmemGenericAllocationHandle *handle, size_t size,
                           const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(handle, size, prop, flags);
    if (rec) {
        struct cmt_alloc_record a;
        uint64_t value = r == CUDA_SUCCESS && handle ? (uint64_t)*handle : 0;
        describe(&a, CMT_API_CU_MEM_CREATE, r, physical_location(prop, (const void *)real), value, size, 0,
                 prop ? (uint64_t)prop->location.type : 0, prop ? (uint64_t)(int64_t)prop->location.id : 0);
        cmt_record_alloc(&h, &a);
        /* PyTorch's expandable segments map their first memory here. The
         * program's call is found through the shim's own frames: the wrapper
         * calling this may have jumped here (a tail call), and the caller's
         * frame pointer is not ours to follow (__builtin_return_address(1)
         * crashed PyTorch with expandable segments on the H200). */
        if (r == CUDA_SUCCESS && cmt_torch_blocks_waiting())
            cmt_torch_blocks_after_segment_call((const void *)(uintptr_t)cmt_stack_caller());
    }
    cmt_hook_leave(&h);
    return r;
}

/* --- pool lifecycle (pool_hooks.h): where pools come from, go, and are trimmed */

static inline void record_mem_pool_create(struct cmt_hook *h, CUresult r, const void *real, CUmemoryPool *pool,
                                          const CUmemPoolProps *poolProps)
{
    (void)real;
    cmt_pool_hook_created(h, CMT_API_CU_MEM_POOL_CREATE, (int32_t)r,
                          r == CUDA_SUCCESS && pool ? (uint64_t)(uintptr_t)*pool : 0,
                          poolProps ? (int)poolProps->location.type : 0, poolProps ? poolProps->location.id : 0,
                          poolProps ? poolProps->maxSize : 0);
}

static inline struct cmt_call_start begin_mem_pool_destroy(struct cmt_hook *h, CUmemoryPool pool)
{
    return cmt_pool_hook_destroy_begin(h, (uint64_t)(uintptr_t)pool);
}

static inline void record_mem_pool_destroy(struct cmt_hook *h, const struct cmt_call_start *start, CUresult r,
                                           const void *real, CUmemoryPool pool)
{
    (void)real;
    cmt_pool_hook_destroyed(h, CMT_API_CU_MEM_POOL_DESTROY, start, (int32_t)r, (uint64_t)(uintptr_t)pool);
}

static inline void record_mem_pool_trim_to(struct cmt_hook *h, CUresult r, const void *real, CUmemoryPool pool,
                                           size_t minBytesToKeep)
{
    (void)real;
    cmt_pool_hook_trimmed(h, CMT_API_CU_MEM_POOL_TRIM, (int32_t)r, (uint64_t)(uintptr_t)pool, minBytesToKeep);
}

/* --- memory shared between processes (docs/trace-format.md, "IPC") ---------
 * Exporter: which allocation a handle names, with the handle's fingerprint;
 * importer: the mapping, its size, the same fingerprint. Not memory of this
 * process: recorded as IPC records, which the analyzer keeps apart. A pool
 * exported or imported as a shareable handle moves no memory (format 2.3);
 * a pointer exported (cuMemPoolExportPointer) names an allocation of the
 * exporter, and one imported (cuMemPoolImportPointer) is a mapping of it
 * here, released by cuMemFree(Async) of the pointer. */

static void record_ipc(struct cmt_hook *h, uint8_t api, CUresult r, const void *real, uint64_t ts, uint64_t addr,
                       uint64_t size, uint64_t aux0, uint64_t aux1, uint64_t aux2, bool with_stack)
{
    cmt_record_ipc_call(h, api, (int32_t)r, cmt_driver_device(real), ts, addr, size, aux0, aux1, aux2, with_stack);
}

_Static_assert(sizeof(CUipcMemHandle) == 64, "a CUDA IPC handle is 64 bytes");
_Static_assert(sizeof(CUmemPoolPtrExportData) == 64, "a pool pointer's export data is 64 bytes");

static inline void record_ipc_get_mem_handle(struct cmt_hook *h, CUresult r, const void *real, CUipcMemHandle *pHandle,
                                             CUdeviceptr dptr)
{
    record_ipc(h, CMT_API_CU_IPC_GET_MEM_HANDLE, r, real, 0, (uint64_t)dptr, 0,
               r == CUDA_SUCCESS && pHandle ? cmt_ipc_fingerprint(pHandle, sizeof *pHandle) : 0, 0, 0,
               cmt_config.stack_depth != 0);
}

static inline void record_ipc_open_mem_handle(struct cmt_hook *h, CUresult r, const void *real, CUdeviceptr *pdptr,
                                              CUipcMemHandle handle, unsigned int Flags)
{
    uint64_t addr = dptr_out(r, pdptr);
    uint64_t size = addr ? cmt_sampler_range_size(addr) : 0;
    record_ipc(h, CMT_API_CU_IPC_OPEN_MEM_HANDLE, r, real, 0, addr, size, cmt_ipc_fingerprint(&handle, sizeof handle),
               Flags, 0, cmt_config.stack_depth != 0);
}

/* Closed: the time before the call (the address may be mapped again once
 * it returns). */
static inline struct cmt_call_start begin_ipc_close_mem_handle(struct cmt_hook *h, CUdeviceptr dptr)
{
    (void)dptr;
    return (struct cmt_call_start){.ts = cmt_event_ts(h->thread)};
}

static inline void record_ipc_close_mem_handle(struct cmt_hook *h, const struct cmt_call_start *start, CUresult r,
                                               const void *real, CUdeviceptr dptr)
{
    record_ipc(h, CMT_API_CU_IPC_CLOSE_MEM_HANDLE, r, real, start->ts, (uint64_t)dptr, 0, 0, 0, 0,
               cmt_config.free_stacks);
}

static inline void record_mem_export_to_shareable_handle(struct cmt_hook *h, CUresult r, const void *real,
                                                         void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                         CUmemAllocationHandleType handleType,
                                                         unsigned long long flags)
{
    (void)flags;
    bool ok = r == CUDA_SUCCESS;
    record_ipc(h, CMT_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE, r, real, 0, (uint64_t)handle, 0,
               ok ? cmt_shareable_fingerprint(shareableHandle, handleType) : 0, (uint64_t)handleType,
               ok ? cmt_shareable_exported_fd(shareableHandle, handleType) : 0, cmt_config.stack_depth != 0);
}

/* osHandle is the descriptor itself (cast to a pointer) for a POSIX fd,
 * a pointer to the handle's bytes for a fabric handle. */
static inline void record_mem_import_from_shareable_handle(struct cmt_hook *h, CUresult r, const void *real,
                                                           CUmemGenericAllocationHandle *handle, void *osHandle,
                                                           CUmemAllocationHandleType shHandleType)
{
    uint64_t value = r == CUDA_SUCCESS && handle ? (uint64_t)*handle : 0;
    record_ipc(h, CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, r, real, 0, value, 0,
               r == CUDA_SUCCESS ? cmt_shareable_fingerprint(osHandle, shHandleType) : 0, (uint64_t)shHandleType,
               cmt_shareable_imported_fd(osHandle, shHandleType), cmt_config.stack_depth != 0);
}

static inline void record_mem_pool_export_to_shareable_handle(struct cmt_hook *h, CUresult r, const void *real,
                                                              void *handle_out, CUmemoryPool pool,
                                                              CUmemAllocationHandleType handleType,
                                                              unsigned long long flags)
{
    (void)flags;
    bool ok = r == CUDA_SUCCESS;
    record_ipc(h, CMT_API_CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, r, real, 0, (uint64_t)(uintptr_t)pool, 0,
               ok ? cmt_shareable_fingerprint(handle_out, handleType) : 0, (uint64_t)handleType,
               ok ? cmt_shareable_exported_fd(handle_out, handleType) : 0, cmt_config.stack_depth != 0);
}

/* handle is the descriptor itself (cast to a pointer) for a POSIX fd, a
 * pointer to the handle's bytes for a fabric handle. */
static inline void record_mem_pool_import_from_shareable_handle(struct cmt_hook *h, CUresult r, const void *real,
                                                                CUmemoryPool *pool_out, void *handle,
                                                                CUmemAllocationHandleType handleType,
                                                                unsigned long long flags)
{
    (void)flags;
    uint64_t pool = r == CUDA_SUCCESS && pool_out ? (uint64_t)(uintptr_t)*pool_out : 0;
    record_ipc(h, CMT_API_CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, r, real, 0, pool, 0,
               r == CUDA_SUCCESS ? cmt_shareable_fingerprint(handle, handleType) : 0, (uint64_t)handleType,
               cmt_shareable_imported_fd(handle, handleType), cmt_config.stack_depth != 0);
}

static inline void record_mem_pool_export_pointer(struct cmt_hook *h, CUresult r, const void *real,
                                                  CUmemPoolPtrExportData *shareData_out, CUdeviceptr ptr)
{
    record_ipc(h, CMT_API_CU_MEM_POOL_EXPORT_POINTER, r, real, 0, (uint64_t)ptr, 0,
               r == CUDA_SUCCESS && shareData_out ? cmt_ipc_fingerprint(shareData_out, sizeof *shareData_out) : 0, 0,
               0, cmt_config.stack_depth != 0);
}

static inline void record_mem_pool_import_pointer(struct cmt_hook *h, CUresult r, const void *real,
                                                  CUdeviceptr *ptr_out, CUmemoryPool pool,
                                                  CUmemPoolPtrExportData *shareData)
{
    uint64_t addr = dptr_out(r, ptr_out);
    record_ipc(h, CMT_API_CU_MEM_POOL_IMPORT_POINTER, r, real, 0, addr, addr ? cmt_sampler_range_size(addr) : 0,
               r == CUDA_SUCCESS && shareData ? cmt_ipc_fingerprint(shareData, sizeof *shareData) : 0,
               (uint64_t)(uintptr_t)pool, 0, cmt_config.stack_depth != 0);
}

/* X(implementation, its real function's type, recorded when, (parameters), (arguments)): a null pool is no
 * call to record. */
#define CMT_DRIVER_CALLS(X)                                                                                        \
    X(mem_pool_create, PFN_cuMemPoolCreate_v11020, true, (CUmemoryPool * pool, const CUmemPoolProps *poolProps),  \
      (pool, poolProps))                                                                                          \
    X(mem_pool_trim_to, PFN_cuMemPoolTrimTo_v11020, pool != NULL, (CUmemoryPool pool, size_t minBytesToKeep),     \
      (pool, minBytesToKeep))                                                                                     \
    X(ipc_get_mem_handle, PFN_cuIpcGetMemHandle_v4010, true, (CUipcMemHandle * pHandle, CUdeviceptr dptr),        \
      (pHandle, dptr))                                                                                            \
    X(ipc_open_mem_handle, PFN_cuIpcOpenMemHandle_v11000, true,                                                   \
      (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), (pdptr, handle, Flags))                   \
    X(mem_export_to_shareable_handle, PFN_cuMemExportToShareableHandle_v10020, true,                              \
      (void *shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType,          \
       unsigned long long flags),                                                                                 \
      (shareableHandle, handle, handleType, flags))                                                               \
    X(mem_import_from_shareable_handle, PFN_cuMemImportFromShareableHandle_v10020, true,                          \
      (CUmemGenericAllocationHandle * handle, void *osHandle, CUmemAllocationHandleType shHandleType),            \
      (handle, osHandle, shHandleType))                                                                           \
    X(mem_pool_export_to_shareable_handle, PFN_cuMemPoolExportToShareableHandle_v11020, true,                     \
      (void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType, unsigned long long flags),      \
      (handle_out, pool, handleType, flags))                                                                      \
    X(mem_pool_import_from_shareable_handle, PFN_cuMemPoolImportFromShareableHandle_v11020, true,                 \
      (CUmemoryPool * pool_out, void *handle, CUmemAllocationHandleType handleType, unsigned long long flags),    \
      (pool_out, handle, handleType, flags))                                                                      \
    X(mem_pool_export_pointer, PFN_cuMemPoolExportPointer_v11020, true,                                           \
      (CUmemPoolPtrExportData * shareData_out, CUdeviceptr ptr), (shareData_out, ptr))                            \
    X(mem_pool_import_pointer, PFN_cuMemPoolImportPointer_v11020, true,                                           \
      (CUdeviceptr * ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData *shareData), (ptr_out, pool, shareData))
#define CMT_DRIVER_GIVE_UPS(X)                                                                                     \
    X(mem_pool_destroy, PFN_cuMemPoolDestroy_v11020, pool != NULL, (CUmemoryPool pool), (pool))                   \
    X(ipc_close_mem_handle, PFN_cuIpcCloseMemHandle_v4010, true, (CUdeviceptr dptr), (dptr))

CMT_DRIVER_CALLS(CMT_DRIVER_CALL)
CMT_DRIVER_GIVE_UPS(CMT_DRIVER_GIVE_UP)

/* --- context hooks: pass through, then forget the remembered device ------------
 * Nothing is recorded; device_cache.h says why these calls are hooked. */

/* Pass through, then forget the thread's remembered device (a switch, a push,
 * a pop, a creation) or every thread's (a context that other threads may
 * have current is destroyed, or a primary context released or reset). The
 * rows of CMT_CONTEXT_HOOKS name one of the two as their implementation. */
#define CMT_CONTEXT_CALL(forget, real, ...)                                     \
    ({                                                                          \
        __typeof__(real) ctx_real_ = (real);                                    \
        CUresult ctx_r_ = CMT_CU_NO_REAL;                                       \
        if (ctx_real_) {                                                        \
            ctx_r_ = ctx_real_(__VA_ARGS__);                                    \
            forget();                                                           \
        }                                                                       \
        ctx_r_;                                                                 \
    })
#define CMT_CONTEXT_FORGETS_THREAD(real, ...) CMT_CONTEXT_CALL(cmt_device_cache_forget_thread, real, __VA_ARGS__)
#define CMT_CONTEXT_FORGETS_ALL(real, ...) CMT_CONTEXT_CALL(cmt_device_cache_forget_all, real, __VA_ARGS__)

/* --- the two copies of each hook, and the table ------------------------------ */

/* What each hook forwards to (driver_table.h): the hooks read it, the
 * lookup (driver_lookup.c) fills it. */
struct cmt_driver_hook_reals cmt_driver_hook_reals[CMT_HOOK_COUNT];

/* The exported copy forwards to the next definition after the shim, found
 * at its first call (CMT_NAMED_REAL); the other copy to what
 * cuGetProcAddress returned. Both are hidden symbols for the table's rows
 * (driver_lookup.c). */
#define CMT_DEFINE_HOOKS(name, base, version, suffix, flags, impl, params, ...)                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), PFN_##base##_v##version##suffix),    \
                   #name " does not have the ABI of PFN_" #base "_v" #version #suffix);                  \
    CMT_EXPORT CUresult name params                                                                       \
    {                                                                                                     \
        return impl(CMT_NAMED_REAL(name), __VA_ARGS__);                                                   \
    }                                                                                                     \
    __attribute__((visibility("hidden"))) CUresult cmt_proc_##name params                                \
    {                                                                                                     \
        return impl((__typeof__(&name))cmt_driver_hook_proc_real(CMT_HOOK_##name), __VA_ARGS__);          \
    }                                                                                                     \
    CMT_SELF_ALIAS(name)
CMT_DRIVER_HOOKS(CMT_DEFINE_HOOKS)
