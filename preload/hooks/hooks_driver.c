/* SPDX-License-Identifier: MIT */
/* CUDA driver API hooks: every allocation entry point of libcuda, each ABI
 * in two copies that differ only in what they forward to (driver_hooks.h):
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
#include "device_cache.h"
#include "driver_device.h"
#include "driver_hooks.h"
#include "hook_record.h"
#include "torch_blocks.h"
#include "pool_hooks.h"
#include "proc_address.h"
#include "real_symbols.h"
#include "sampler.h"

#include <string.h>

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

static void record_alloc(struct cmt_hook *h, uint8_t api, CUresult r, int32_t device, uint64_t addr, uint64_t size,
                         uint64_t stream, uint64_t aux0, uint64_t aux1)
{
    struct cmt_alloc_record a = {
        .api = api,
        .kind = cmt_api_default_kind(api),
        .result = (int32_t)r,
        .device = device,
        .addr = addr,
        .size = size,
        .stream = stream,
        .aux = {aux0, aux1},
    };
    cmt_record_alloc(h, &a);
}

/* Releases: the timestamp is taken before the real call (format.h). Zero
 * handles release nothing and are not events. */
#define CMT_RELEASE_HOOK(api, value, size, stream, call)                                   \
    do {                                                                                   \
        struct cmt_hook h;                                                                 \
        bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER) && (value) != 0;                                     \
        uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;                                    \
        CUresult r = (call);                                                               \
        if (rec)                                                                           \
            cmt_record_free_sized(&h, api, ts, (int32_t)r, (uint64_t)(value), size, stream); \
        cmt_hook_leave(&h);                                                                \
        return r;                                                                          \
    } while (0)

/* --- implementations, shared by both copies of each hook --------------------- */

static CUresult mem_alloc(PFN_cuMemAlloc_v3020 real, CUdeviceptr *dptr, size_t bytesize)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(dptr, bytesize);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_ALLOC, r, cmt_driver_device((const void *)real), dptr_out(r, dptr), bytesize, 0,
                     0, 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_free(PFN_cuMemFree_v3020 real, CUdeviceptr dptr)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_MEM_FREE, dptr, 0, 0, real(dptr));
}

static CUresult mem_alloc_pitch(PFN_cuMemAllocPitch_v3020 real, CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                size_t Height, unsigned int ElementSizeBytes)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
    if (rec) {
        /* Granted: pitch x height; asked for: width x height (aux1). */
        uint64_t asked = (uint64_t)WidthInBytes * Height;
        uint64_t granted = r == CUDA_SUCCESS && pPitch ? (uint64_t)*pPitch * Height : asked;
        record_alloc(&h, CMT_API_CU_MEM_ALLOC_PITCH, r, cmt_driver_device((const void *)real), dptr_out(r, dptr), granted,
                     0, 0, asked);
    }
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_alloc_managed(PFN_cuMemAllocManaged_v6000 real, CUdeviceptr *dptr, size_t bytesize,
                                  unsigned int flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(dptr, bytesize, flags);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_ALLOC_MANAGED, r, cmt_driver_device((const void *)real), dptr_out(r, dptr),
                     bytesize, 0, flags, 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_alloc_host(PFN_cuMemAllocHost_v3020 real, void **pp, size_t bytesize)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pp, bytesize);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_ALLOC_HOST, r, -1, hostptr_out(r, pp), bytesize, 0, 0, 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_host_alloc(PFN_cuMemHostAlloc_v2020 real, void **pp, size_t bytesize, unsigned int Flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pp, bytesize, Flags);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_HOST_ALLOC, r, -1, hostptr_out(r, pp), bytesize, 0, Flags, 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_free_host(PFN_cuMemFreeHost_v2000 real, void *p)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_MEM_FREE_HOST, (uintptr_t)p, 0, 0, real(p));
}

static CUresult mem_alloc_async(PFN_cuMemAllocAsync_v11020 real, CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(dptr, bytesize, hStream);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_ALLOC_ASYNC, r, cmt_driver_device((const void *)real), dptr_out(r, dptr),
                     bytesize, (uint64_t)(uintptr_t)hStream, 0, 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_free_async(PFN_cuMemFreeAsync_v11020 real, CUdeviceptr dptr, CUstream hStream)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_MEM_FREE_ASYNC, dptr, 0, (uint64_t)(uintptr_t)hStream, real(dptr, hStream));
}

static CUresult mem_alloc_from_pool_async(PFN_cuMemAllocFromPoolAsync_v11020 real, CUdeviceptr *dptr, size_t bytesize,
                                          CUmemoryPool pool, CUstream hStream)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(dptr, bytesize, pool, hStream);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, r, cmt_driver_device((const void *)real),
                     dptr_out(r, dptr), bytesize, (uint64_t)(uintptr_t)hStream, (uint64_t)(uintptr_t)pool, 0);
    cmt_hook_leave(&h);
    return r;
}

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

static CUresult mem_create(PFN_cuMemCreate_v10020 real, CUmemGenericAllocationHandle *handle, size_t size,
                           const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(handle, size, prop, flags);
    if (rec) {
        uint64_t value = r == CUDA_SUCCESS && handle ? (uint64_t)*handle : 0;
        record_alloc(&h, CMT_API_CU_MEM_CREATE, r, physical_location(prop, (const void *)real), value, size, 0,
                     prop ? (uint64_t)prop->location.type : 0, prop ? (uint64_t)(int64_t)prop->location.id : 0);
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

static CUresult mem_release(PFN_cuMemRelease_v10020 real, CUmemGenericAllocationHandle handle)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_MEM_RELEASE, handle, 0, 0, real(handle));
}

static CUresult mem_map(PFN_cuMemMap_v10020 real, CUdeviceptr ptr, size_t size, size_t offset,
                        CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(ptr, size, offset, handle, flags);
    /* The device is the physical handle's; the analyzer knows it from the
     * handle's cuMemCreate. The current context's stands in when it does
     * not (a handle created before tracing, or imported). */
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_MAP, r, cmt_driver_device((const void *)real), r == CUDA_SUCCESS ? ptr : 0, size,
                     0, handle, offset);
    cmt_hook_leave(&h);
    return r;
}

/* One unmap may remove several mappings: the event carries the whole span. */
static CUresult mem_unmap(PFN_cuMemUnmap_v10020 real, CUdeviceptr ptr, size_t size)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_MEM_UNMAP, ptr, size, 0, real(ptr, size));
}

static CUresult mem_address_reserve(PFN_cuMemAddressReserve_v10020 real, CUdeviceptr *ptr, size_t size,
                                    size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(ptr, size, alignment, addr, flags);
    if (rec)
        record_alloc(&h, CMT_API_CU_MEM_ADDRESS_RESERVE, r, cmt_driver_device((const void *)real), dptr_out(r, ptr), size,
                     0, alignment, addr);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_address_free(PFN_cuMemAddressFree_v10020 real, CUdeviceptr ptr, size_t size)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_MEM_ADDRESS_FREE, ptr, size, 0, real(ptr, size));
}

static CUresult array_create(PFN_cuArrayCreate_v3020 real, CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pHandle, desc);
    if (rec) {
        uint64_t bytes = desc ? cmt_array_bytes(desc->Format, desc->NumChannels, desc->Width, desc->Height, 0) : 0;
        record_alloc(&h, CMT_API_CU_ARRAY_CREATE, r, cmt_driver_device((const void *)real),
                     hostptr_out(r, (void *const *)pHandle), bytes, 0, desc ? (uint64_t)desc->Format : 0,
                     desc ? desc->NumChannels : 0);
    }
    cmt_hook_leave(&h);
    return r;
}

static CUresult array_3d_create(PFN_cuArray3DCreate_v3020 real, CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pHandle, desc);
    if (rec) {
        uint64_t bytes =
            desc ? cmt_array_bytes(desc->Format, desc->NumChannels, desc->Width, desc->Height, desc->Depth) : 0;
        record_alloc(&h, CMT_API_CU_ARRAY_3D_CREATE, r, cmt_driver_device((const void *)real),
                     hostptr_out(r, (void *const *)pHandle), bytes, 0, desc ? (uint64_t)desc->Format : 0,
                     desc ? desc->NumChannels : 0);
    }
    cmt_hook_leave(&h);
    return r;
}

static CUresult array_destroy(PFN_cuArrayDestroy_v2000 real, CUarray hArray)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CMT_RELEASE_HOOK(CMT_API_CU_ARRAY_DESTROY, (uintptr_t)hArray, 0, 0, real(hArray));
}

/* Pool lifecycle (pool_hooks.h): where pools come from, go, and are trimmed. */
static CUresult mem_pool_create(PFN_cuMemPoolCreate_v11020 real, CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pool, poolProps);
    if (rec)
        cmt_pool_hook_created(&h, CMT_API_CU_MEM_POOL_CREATE, (int32_t)r,
                              r == CUDA_SUCCESS && pool ? (uint64_t)(uintptr_t)*pool : 0,
                              poolProps ? (int)poolProps->location.type : 0, poolProps ? poolProps->location.id : 0,
                              poolProps ? poolProps->maxSize : 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_pool_destroy(PFN_cuMemPoolDestroy_v11020 real, CUmemoryPool pool)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER) && pool;
    struct cmt_pool_destroy d = rec ? cmt_pool_hook_destroy_begin(&h, (uint64_t)(uintptr_t)pool) : (struct cmt_pool_destroy){0};
    CUresult r = real(pool);
    if (rec)
        cmt_pool_hook_destroyed(&h, CMT_API_CU_MEM_POOL_DESTROY, &d, (int32_t)r, (uint64_t)(uintptr_t)pool);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_pool_trim_to(PFN_cuMemPoolTrimTo_v11020 real, CUmemoryPool pool, size_t minBytesToKeep)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER) && pool;
    CUresult r = real(pool, minBytesToKeep);
    if (rec)
        cmt_pool_hook_trimmed(&h, CMT_API_CU_MEM_POOL_TRIM, (int32_t)r, (uint64_t)(uintptr_t)pool, minBytesToKeep);
    cmt_hook_leave(&h);
    return r;
}

/* --- memory shared between processes (docs/trace-format.md, "IPC") ---------
 * Exporter: which allocation a handle names, with the handle's fingerprint;
 * importer: the mapping, its size, the same fingerprint. Not memory of this
 * process: recorded as IPC records, which the analyzer keeps apart. */

static void record_ipc(struct cmt_hook *h, uint8_t api, CUresult r, const void *real, uint64_t ts, uint64_t addr,
                       uint64_t size, uint64_t aux0, uint64_t aux1, uint64_t aux2, bool with_stack)
{
    struct cmt_ipc_record p = {
        .api = api,
        .result = (int32_t)r,
        .device = cmt_driver_device(real),
        .ts = ts ? ts : cmt_event_ts(h->thread),
        .addr = addr,
        .size = size,
        .aux = {aux0, aux1, aux2},
        .with_stack = with_stack,
    };
    cmt_record_ipc(h, &p);
}

_Static_assert(sizeof(CUipcMemHandle) == 64, "a CUDA IPC handle is 64 bytes");

static CUresult ipc_get_mem_handle(PFN_cuIpcGetMemHandle_v4010 real, CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pHandle, dptr);
    if (rec)
        record_ipc(&h, CMT_API_CU_IPC_GET_MEM_HANDLE, r, (const void *)real, 0, (uint64_t)dptr, 0,
                   r == CUDA_SUCCESS && pHandle ? cmt_ipc_fingerprint(pHandle, sizeof *pHandle) : 0, 0, 0,
                   cmt_config.stack_depth != 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult ipc_open_mem_handle(PFN_cuIpcOpenMemHandle_v11000 real, CUdeviceptr *pdptr, CUipcMemHandle handle,
                                    unsigned int Flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pdptr, handle, Flags);
    if (rec) {
        uint64_t addr = dptr_out(r, pdptr);
        uint64_t size = addr ? cmt_sampler_range_size(addr) : 0;
        record_ipc(&h, CMT_API_CU_IPC_OPEN_MEM_HANDLE, r, (const void *)real, 0, addr, size,
                   cmt_ipc_fingerprint(&handle, sizeof handle), Flags, 0, cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}

static CUresult ipc_close_mem_handle(PFN_cuIpcCloseMemHandle_v4010 real, CUdeviceptr dptr)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;
    CUresult r = real(dptr);
    if (rec)
        record_ipc(&h, CMT_API_CU_IPC_CLOSE_MEM_HANDLE, r, (const void *)real, ts, (uint64_t)dptr, 0, 0, 0,
                   0, cmt_config.free_stacks);
    cmt_hook_leave(&h);
    return r;
}

/* A shareable handle's fingerprint: a fabric handle's 64 bytes name the
 * memory in every process; a file descriptor or a Win32 handle is a number
 * of this process only (0: not matched across traces). */
static uint64_t shareable_fingerprint(const void *sh, CUmemAllocationHandleType type)
{
    if (!sh || type != CU_MEM_HANDLE_TYPE_FABRIC)
        return 0;
    return cmt_ipc_fingerprint(sh, sizeof(CUmemFabricHandle));
}

static uint64_t shareable_fd(const void *sh, CUmemAllocationHandleType type)
{
    if (!sh || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return 0;
    int fd;
    memcpy(&fd, sh, sizeof fd);
    return (uint64_t)(uint32_t)fd;
}

static CUresult mem_export_to_shareable_handle(PFN_cuMemExportToShareableHandle_v10020 real, void *shareableHandle,
                                               CUmemGenericAllocationHandle handle,
                                               CUmemAllocationHandleType handleType, unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(shareableHandle, handle, handleType, flags);
    if (rec) {
        bool ok = r == CUDA_SUCCESS;
        record_ipc(&h, CMT_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE, r, (const void *)real, 0, (uint64_t)handle, 0,
                   ok ? shareable_fingerprint(shareableHandle, handleType) : 0, (uint64_t)handleType,
                   ok ? shareable_fd(shareableHandle, handleType) : 0, cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}

/* osHandle is the descriptor itself (cast to a pointer) for a POSIX fd,
 * a pointer to the handle's bytes for a fabric handle. */
static CUresult mem_import_from_shareable_handle(PFN_cuMemImportFromShareableHandle_v10020 real,
                                                 CUmemGenericAllocationHandle *handle, void *osHandle,
                                                 CUmemAllocationHandleType shHandleType)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(handle, osHandle, shHandleType);
    if (rec) {
        uint64_t value = r == CUDA_SUCCESS && handle ? (uint64_t)*handle : 0;
        /* The caller's bytes are read only once the driver has accepted
         * them: a failed call may have been given a pointer to nothing. */
        uint64_t fp = r == CUDA_SUCCESS && shHandleType == CU_MEM_HANDLE_TYPE_FABRIC
                          ? shareable_fingerprint(osHandle, shHandleType)
                          : 0;
        uint64_t fd = shHandleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? (uint64_t)(uint32_t)(uintptr_t)osHandle : 0;
        record_ipc(&h, CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, r, (const void *)real, 0, value, 0, fp,
                   (uint64_t)shHandleType, fd, cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}

/* --- stream-ordered pools shared between processes (format 2.3) -------------
 * A pool exported or imported as a shareable handle moves no memory; a
 * pointer exported (cuMemPoolExportPointer) names an allocation of the
 * exporter, and one imported (cuMemPoolImportPointer) is a mapping of it
 * here, released by cuMemFree(Async) of the pointer. */

_Static_assert(sizeof(CUmemPoolPtrExportData) == 64, "a pool pointer's export data is 64 bytes");

static CUresult mem_pool_export_to_shareable_handle(PFN_cuMemPoolExportToShareableHandle_v11020 real, void *handle_out,
                                                    CUmemoryPool pool, CUmemAllocationHandleType handleType,
                                                    unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(handle_out, pool, handleType, flags);
    if (rec) {
        bool ok = r == CUDA_SUCCESS;
        record_ipc(&h, CMT_API_CU_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, r, (const void *)real, 0,
                   (uint64_t)(uintptr_t)pool, 0, ok ? shareable_fingerprint(handle_out, handleType) : 0,
                   (uint64_t)handleType, ok ? shareable_fd(handle_out, handleType) : 0, cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}

/* handle is the descriptor itself (cast to a pointer) for a POSIX fd, a
 * pointer to the handle's bytes for a fabric handle. */
static CUresult mem_pool_import_from_shareable_handle(PFN_cuMemPoolImportFromShareableHandle_v11020 real,
                                                      CUmemoryPool *pool_out, void *handle,
                                                      CUmemAllocationHandleType handleType, unsigned long long flags)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(pool_out, handle, handleType, flags);
    if (rec) {
        uint64_t pool = r == CUDA_SUCCESS && pool_out ? (uint64_t)(uintptr_t)*pool_out : 0;
        uint64_t fd = handleType == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ? (uint64_t)(uint32_t)(uintptr_t)handle : 0;
        record_ipc(&h, CMT_API_CU_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, r, (const void *)real, 0, pool, 0,
                   r == CUDA_SUCCESS ? shareable_fingerprint(handle, handleType) : 0, (uint64_t)handleType, fd,
                   cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_pool_export_pointer(PFN_cuMemPoolExportPointer_v11020 real, CUmemPoolPtrExportData *shareData_out,
                                        CUdeviceptr ptr)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(shareData_out, ptr);
    if (rec)
        record_ipc(&h, CMT_API_CU_MEM_POOL_EXPORT_POINTER, r, (const void *)real, 0, (uint64_t)ptr, 0,
                   r == CUDA_SUCCESS && shareData_out ? cmt_ipc_fingerprint(shareData_out, sizeof *shareData_out) : 0,
                   0, 0, cmt_config.stack_depth != 0);
    cmt_hook_leave(&h);
    return r;
}

static CUresult mem_pool_import_pointer(PFN_cuMemPoolImportPointer_v11020 real, CUdeviceptr *ptr_out,
                                        CUmemoryPool pool, CUmemPoolPtrExportData *shareData)
{
    if (!real)
        return CMT_CU_NO_REAL;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_DRIVER);
    CUresult r = real(ptr_out, pool, shareData);
    if (rec) {
        uint64_t addr = dptr_out(r, ptr_out);
        record_ipc(&h, CMT_API_CU_MEM_POOL_IMPORT_POINTER, r, (const void *)real, 0, addr,
                   addr ? cmt_sampler_range_size(addr) : 0,
                   r == CUDA_SUCCESS && shareData ? cmt_ipc_fingerprint(shareData, sizeof *shareData) : 0,
                   (uint64_t)(uintptr_t)pool, 0,
                   cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}

/* --- context hooks: pass through, then forget the remembered device ------------
 * Nothing is recorded; device_cache.h says why these calls are hooked. */

static CUresult ctx_switch(PFN_cuCtxSetCurrent_v4000 real, CUcontext ctx)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(ctx);
    cmt_device_cache_forget_thread();
    return r;
}

static CUresult ctx_pop(PFN_cuCtxPopCurrent_v4000 real, CUcontext *pctx)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(pctx);
    cmt_device_cache_forget_thread();
    return r;
}

static CUresult ctx_create_v2(PFN_cuCtxCreate_v3020 real, CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(pctx, flags, dev);
    cmt_device_cache_forget_thread();
    return r;
}

static CUresult ctx_create_v3(PFN_cuCtxCreate_v11040 real, CUcontext *pctx, CUexecAffinityParam *params,
                              int nparams, unsigned int flags, CUdevice dev)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(pctx, params, nparams, flags, dev);
    cmt_device_cache_forget_thread();
    return r;
}

static CUresult ctx_create_v4(PFN_cuCtxCreate_v12050 real, CUcontext *pctx, CUctxCreateParams *params,
                              unsigned int flags, CUdevice dev)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(pctx, params, flags, dev);
    cmt_device_cache_forget_thread();
    return r;
}

/* A context that other threads may have current is destroyed or reset. */
static CUresult ctx_destroy(PFN_cuCtxDestroy_v4000 real, CUcontext ctx)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(ctx);
    cmt_device_cache_forget_all();
    return r;
}

static CUresult primary_ctx_gone(PFN_cuDevicePrimaryCtxRelease_v11000 real, CUdevice dev)
{
    if (!real)
        return CMT_CU_NO_REAL;
    CUresult r = real(dev);
    cmt_device_cache_forget_all();
    return r;
}

/* --- the two copies of each hook, and the table ------------------------------ */

#define LEGACY CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define PER_THREAD CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

/* X(exported name, base name, ABI version, PFN_ suffix, stream flags, implementation, (parameters), arguments...) */
#define CMT_ALLOCATION_HOOKS(X)                                                                                    \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, , LEGACY, mem_alloc, (CUdeviceptr * dptr, size_t bytesize), dptr, bytesize) \
    X(cuMemFree_v2, cuMemFree, 3020, , LEGACY, mem_free, (CUdeviceptr dptr), dptr)                                 \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, , LEGACY, mem_alloc_pitch,                                        \
      (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes),    \
      dptr, pPitch, WidthInBytes, Height, ElementSizeBytes)                                                        \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, , LEGACY, mem_alloc_managed,                                     \
      (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), dptr, bytesize, flags)                            \
    X(cuMemAllocHost_v2, cuMemAllocHost, 3020, , LEGACY, mem_alloc_host, (void **pp, size_t bytesize), pp,         \
      bytesize)                                                                                                    \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, , LEGACY, mem_host_alloc, (void **pp, size_t bytesize, unsigned int Flags), \
      pp, bytesize, Flags)                                                                                         \
    X(cuMemFreeHost, cuMemFreeHost, 2000, , LEGACY, mem_free_host, (void *p), p)                                   \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, , LEGACY, mem_alloc_async,                                          \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), dptr, bytesize, hStream)                            \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, _ptsz, PER_THREAD, mem_alloc_async,                            \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), dptr, bytesize, hStream)                            \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, , LEGACY, mem_free_async, (CUdeviceptr dptr, CUstream hStream), dptr, \
      hStream)                                                                                                     \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, _ptsz, PER_THREAD, mem_free_async,                               \
      (CUdeviceptr dptr, CUstream hStream), dptr, hStream)                                                         \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, , LEGACY, mem_alloc_from_pool_async,                \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), dptr, bytesize, pool, hStream)   \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, _ptsz, PER_THREAD, mem_alloc_from_pool_async,  \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), dptr, bytesize, pool, hStream)   \
    X(cuMemCreate, cuMemCreate, 10020, , LEGACY, mem_create,                                                       \
      (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,                        \
       unsigned long long flags),                                                                                  \
      handle, size, prop, flags)                                                                                   \
    X(cuMemRelease, cuMemRelease, 10020, , LEGACY, mem_release, (CUmemGenericAllocationHandle handle), handle)     \
    X(cuMemMap, cuMemMap, 10020, , LEGACY, mem_map,                                                                \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,                           \
       unsigned long long flags),                                                                                  \
      ptr, size, offset, handle, flags)                                                                            \
    X(cuMemUnmap, cuMemUnmap, 10020, , LEGACY, mem_unmap, (CUdeviceptr ptr, size_t size), ptr, size)               \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020, , LEGACY, mem_address_reserve,                              \
      (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags), ptr, size,   \
      alignment, addr, flags)                                                                                      \
    X(cuMemAddressFree, cuMemAddressFree, 10020, , LEGACY, mem_address_free, (CUdeviceptr ptr, size_t size), ptr,  \
      size)                                                                                                        \
    X(cuArrayCreate_v2, cuArrayCreate, 3020, , LEGACY, array_create,                                               \
      (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray), pHandle, pAllocateArray)                   \
    X(cuArray3DCreate_v2, cuArray3DCreate, 3020, , LEGACY, array_3d_create,                                        \
      (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray), pHandle, pAllocateArray)                 \
    X(cuArrayDestroy, cuArrayDestroy, 2000, , LEGACY, array_destroy, (CUarray hArray), hArray)                     \
    X(cuMemPoolCreate, cuMemPoolCreate, 11020, , LEGACY, mem_pool_create,                                          \
      (CUmemoryPool * pool, const CUmemPoolProps *poolProps), pool, poolProps)                                     \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 11020, , LEGACY, mem_pool_destroy, (CUmemoryPool pool), pool)            \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, , LEGACY, mem_pool_trim_to, (CUmemoryPool pool, size_t minBytesToKeep), \
      pool, minBytesToKeep) \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, , LEGACY, ipc_get_mem_handle,                                   \
      (CUipcMemHandle * pHandle, CUdeviceptr dptr), pHandle, dptr)                                                 \
    X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, , LEGACY, ipc_open_mem_handle,                            \
      (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), pdptr, handle, Flags)                      \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 4010, , LEGACY, ipc_open_mem_handle,                                \
      (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), pdptr, handle, Flags)                      \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, , LEGACY, ipc_close_mem_handle, (CUdeviceptr dptr), dptr)   \
    X(cuMemExportToShareableHandle, cuMemExportToShareableHandle, 10020, , LEGACY, mem_export_to_shareable_handle, \
      (void *shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType,          \
       unsigned long long flags),                                                                                  \
      shareableHandle, handle, handleType, flags)                                                                  \
    X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, 10020, , LEGACY,                             \
      mem_import_from_shareable_handle,                                                                            \
      (CUmemGenericAllocationHandle * handle, void *osHandle, CUmemAllocationHandleType shHandleType), handle,     \
      osHandle, shHandleType)                                                                                      \
    X(cuMemPoolExportToShareableHandle, cuMemPoolExportToShareableHandle, 11020, , LEGACY,                         \
      mem_pool_export_to_shareable_handle,                                                                         \
      (void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType, unsigned long long flags),       \
      handle_out, pool, handleType, flags)                                                                         \
    X(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle, 11020, , LEGACY,                     \
      mem_pool_import_from_shareable_handle,                                                                       \
      (CUmemoryPool * pool_out, void *handle, CUmemAllocationHandleType handleType, unsigned long long flags),     \
      pool_out, handle, handleType, flags)                                                                         \
    X(cuMemPoolExportPointer, cuMemPoolExportPointer, 11020, , LEGACY, mem_pool_export_pointer,                   \
      (CUmemPoolPtrExportData * shareData_out, CUdeviceptr ptr), shareData_out, ptr)                              \
    X(cuMemPoolImportPointer, cuMemPoolImportPointer, 11020, , LEGACY, mem_pool_import_pointer,                   \
      (CUdeviceptr * ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData * shareData), ptr_out, pool, shareData)   \
    CMT_CONTEXT_HOOKS(X)

/* Every ABI of the calls that change a thread's current context. */
#define CMT_CONTEXT_HOOKS(X)                                                                                       \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, , LEGACY, ctx_switch, (CUcontext ctx), ctx)                          \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, , LEGACY, ctx_switch, (CUcontext ctx), ctx)                     \
    X(cuCtxPushCurrent, cuCtxPushCurrent, 2000, , LEGACY, ctx_switch, (CUcontext ctx), ctx)                        \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, , LEGACY, ctx_pop, (CUcontext * pctx), pctx)                      \
    X(cuCtxPopCurrent, cuCtxPopCurrent, 2000, , LEGACY, ctx_pop, (CUcontext * pctx), pctx)                         \
    X(cuCtxCreate, cuCtxCreate, 2000, , LEGACY, ctx_create_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev), \
      pctx, flags, dev)                                                                                            \
    X(cuCtxCreate_v2, cuCtxCreate, 3020, , LEGACY, ctx_create_v2,                                                  \
      (CUcontext * pctx, unsigned int flags, CUdevice dev), pctx, flags, dev)                                      \
    X(cuCtxCreate_v3, cuCtxCreate, 11040, , LEGACY, ctx_create_v3,                                                 \
      (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags, CUdevice dev),      \
      pctx, paramsArray, numParams, flags, dev)                                                                    \
    X(cuCtxCreate_v4, cuCtxCreate, 12050, , LEGACY, ctx_create_v4,                                                 \
      (CUcontext * pctx, CUctxCreateParams * ctxCreateParams, unsigned int flags, CUdevice dev), pctx,             \
      ctxCreateParams, flags, dev)                                                                                 \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, , LEGACY, ctx_destroy, (CUcontext ctx), ctx)                            \
    X(cuCtxDestroy, cuCtxDestroy, 2000, , LEGACY, ctx_destroy, (CUcontext ctx), ctx)                               \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, , LEGACY, primary_ctx_gone, (CUdevice dev), dev) \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, , LEGACY, primary_ctx_gone, (CUdevice dev), dev) \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, , LEGACY, primary_ctx_gone, (CUdevice dev), dev) \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, , LEGACY, primary_ctx_gone, (CUdevice dev), dev)

#define CMT_DEFINE_HOOKS(name, base, version, suffix, flags, impl, params, ...)                          \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), PFN_##base##_v##version##suffix),    \
                   #name " does not have the ABI of PFN_" #base "_v" #version #suffix);                  \
    CMT_REAL_SLOT(name);                                                                                  \
    CMT_EXPORT CUresult name params                                                                       \
    {                                                                                                     \
        return impl(CMT_REAL_DRIVER(name), __VA_ARGS__);                                                  \
    }                                                                                                     \
    static CUresult cmt_proc_##name params                                                                \
    {                                                                                                     \
        return impl((__typeof__(&name))cmt_driver_hook_proc_real(CMT_HOOK_##name), __VA_ARGS__);          \
    }                                                                                                     \
    CMT_SELF_ALIAS(name)
CMT_ALLOCATION_HOOKS(CMT_DEFINE_HOOKS)

#define CMT_HOOK_ROW(name, base, version, suffix, flags, impl, params, ...) \
    [CMT_HOOK_##name] = {                                                    \
        .symbol = #base,                                                     \
        .abi_version = version,                                              \
        .stream_flags = flags,                                               \
        .export_name = #name,                                                \
        .named_hook = (void *)&cmt_self_##name,                              \
        .named_real = (void **)&real_##name,                                 \
        .proc_hook = (void *)&cmt_proc_##name,                               \
    },

struct cmt_driver_hook cmt_driver_hooks[CMT_HOOK_COUNT] = {
    CMT_ALLOCATION_HOOKS(CMT_HOOK_ROW)
    /* The lookup function itself: the runtime asks cuGetProcAddress_v2 for
     * "cuGetProcAddress" at 11030 (v1 ABI) and 12000 (v2 ABI) and fetches
     * everything else through what it gets back. */
    [CMT_HOOK_cuGetProcAddress] = {
        .symbol = "cuGetProcAddress",
        .abi_version = 11030,
        .stream_flags = LEGACY,
        .export_name = "cuGetProcAddress",
        .named_hook = (void *)&cmt_self_cuGetProcAddress,
        .named_real = &cmt_get_proc_address_v1_named_real,
        .proc_hook = (void *)&cmt_get_proc_address_v1_proc,
        .dlsym_hook = (void *)&cmt_get_proc_address_v1_dlsym,
    },
    [CMT_HOOK_cuGetProcAddress_v2] = {
        .symbol = "cuGetProcAddress",
        .abi_version = 12000,
        .stream_flags = LEGACY,
        .export_name = "cuGetProcAddress_v2",
        .named_hook = (void *)&cmt_self_cuGetProcAddress_v2,
        .named_real = &cmt_get_proc_address_v2_named_real,
        .proc_hook = (void *)&cmt_get_proc_address_v2_proc,
        .dlsym_hook = (void *)&cmt_get_proc_address_v2_dlsym,
    },
};
