/* SPDX-License-Identifier: MIT */
/* Stream-ordered pools shared between processes, runtime API (format 2.3,
 * docs/trace-format.md "IPC"): cudaMemPoolExportToShareableHandle and
 * cudaMemPoolImportFromShareableHandle (a pool shared: no memory moves),
 * cudaMemPoolExportPointer (the exporter: which allocation, and the
 * fingerprint of the 64-byte export data the importer's trace holds too)
 * and cudaMemPoolImportPointer (the importer: where the mapping lies and
 * how large; cudaFreeAsync or cudaFree of the pointer releases it). With
 * the dynamic runtime the driver call underneath passes through (one event
 * per user call). */
#include <cuda_runtime_api.h>

#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_exports.h"
#include "runtime_device.h"
#include "sampler.h"
#include "shareable_handle.h"

CMT_REAL_SLOT(cudaMemPoolExportToShareableHandle);
CMT_REAL_SLOT(cudaMemPoolImportFromShareableHandle);
CMT_REAL_SLOT(cudaMemPoolExportPointer);
CMT_REAL_SLOT(cudaMemPoolImportPointer);

_Static_assert(sizeof(struct cudaMemPoolPtrExportData) == 64, "a pool pointer's export data is 64 bytes");
_Static_assert(sizeof(cudaMemFabricHandle_t) == 64, "a fabric handle is 64 bytes");

static void record(struct cmt_hook *h, uint8_t api, cudaError_t r, const void *real, uint64_t addr, uint64_t size,
                   uint64_t aux0, uint64_t aux1, uint64_t aux2)
{
    cmt_record_ipc_call(h, api, r, cmt_runtime_device(real), 0, addr, size, aux0, aux1, aux2,
                        cmt_config.stack_depth != 0);
}

/* The runtime's shareable handles are the driver's (shareable_handle.h). */
_Static_assert((int)cudaMemHandleTypeFabric == (int)CU_MEM_HANDLE_TYPE_FABRIC &&
                   (int)cudaMemHandleTypePosixFileDescriptor == (int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
                   sizeof(cudaMemFabricHandle_t) == sizeof(CUmemFabricHandle),
               "the runtime's handle types are the driver's");

CMT_EXPORT cudaError_t cudaMemPoolExportToShareableHandle(void *shareableHandle, cudaMemPool_t memPool,
                                                          enum cudaMemAllocationHandleType handleType,
                                                          unsigned int flags)
{
    __typeof__(cudaMemPoolExportToShareableHandle) *real = CMT_REAL(cudaMemPoolExportToShareableHandle);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(shareableHandle, memPool, handleType, flags);
    if (rec) {
        bool ok = r == cudaSuccess;
        record(&h, CMT_API_CUDA_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, r, (const void *)real,
               (uint64_t)(uintptr_t)memPool, 0, ok ? cmt_shareable_fingerprint(shareableHandle, handleType) : 0,
               (uint64_t)handleType, ok ? cmt_shareable_exported_fd(shareableHandle, handleType) : 0);
    }
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolExportToShareableHandle)

/* shareableHandle is the descriptor itself (cast to a pointer) for a POSIX
 * fd, a pointer to the handle's bytes for a fabric handle. */
CMT_EXPORT cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t *memPool, void *shareableHandle,
                                                            enum cudaMemAllocationHandleType handleType,
                                                            unsigned int flags)
{
    __typeof__(cudaMemPoolImportFromShareableHandle) *real = CMT_REAL(cudaMemPoolImportFromShareableHandle);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(memPool, shareableHandle, handleType, flags);
    if (rec) {
        uint64_t pool = r == cudaSuccess && memPool ? (uint64_t)(uintptr_t)*memPool : 0;
        record(&h, CMT_API_CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, r, (const void *)real, pool, 0,
               r == cudaSuccess ? cmt_shareable_fingerprint(shareableHandle, handleType) : 0, (uint64_t)handleType,
               cmt_shareable_imported_fd(shareableHandle, handleType));
    }
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolImportFromShareableHandle)

CMT_EXPORT cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *exportData, void *ptr)
{
    __typeof__(cudaMemPoolExportPointer) *real = CMT_REAL(cudaMemPoolExportPointer);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(exportData, ptr);
    if (rec)
        record(&h, CMT_API_CUDA_MEM_POOL_EXPORT_POINTER, r, (const void *)real, (uint64_t)(uintptr_t)ptr, 0,
               r == cudaSuccess && exportData ? cmt_ipc_fingerprint(exportData, sizeof *exportData) : 0, 0, 0);
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolExportPointer)

CMT_EXPORT cudaError_t cudaMemPoolImportPointer(void **ptr, cudaMemPool_t memPool,
                                                struct cudaMemPoolPtrExportData *exportData)
{
    __typeof__(cudaMemPoolImportPointer) *real = CMT_REAL(cudaMemPoolImportPointer);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(ptr, memPool, exportData);
    if (rec) {
        uint64_t addr = r == cudaSuccess && ptr ? (uint64_t)(uintptr_t)*ptr : 0;
        record(&h, CMT_API_CUDA_MEM_POOL_IMPORT_POINTER, r, (const void *)real, addr,
               addr ? cmt_sampler_range_size(addr) : 0,
               r == cudaSuccess && exportData ? cmt_ipc_fingerprint(exportData, sizeof *exportData) : 0,
               (uint64_t)(uintptr_t)memPool, 0);
    }
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaMemPoolImportPointer)
