/* SPDX-License-Identifier: MIT */
/* Stream-ordered pools shared between processes, runtime API (format 2.3,
 * docs/trace-format.md "IPC"): cudaMemPoolExportToShareableHandle and
 * cudaMemPoolImportFromShareableHandle (a pool shared: no memory moves),
 * cudaMemPoolExportPointer (the exporter: which allocation, and the
 * fingerprint of the 64-byte export data the importer's trace holds too)
 * and cudaMemPoolImportPointer (the importer: where the mapping lies and
 * how large; cudaFreeAsync or cudaFree of the pointer releases it). With
 * the dynamic runtime the driver call underneath passes through (one event
 * per user call). Each hook is a row of the list below, expanded by the
 * skeleton of runtime_hooks.h; what it records is its record_NAME. */
#include <cuda_runtime_api.h>

#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_device.h"
#include "runtime_hooks.h"
#include "sampler.h"
#include "shareable_handle.h"

_Static_assert(sizeof(struct cudaMemPoolPtrExportData) == 64, "a pool pointer's export data is 64 bytes");
/* The runtime's shareable handles are the driver's (shareable_handle.h). */
_Static_assert((int)cudaMemHandleTypeFabric == (int)CU_MEM_HANDLE_TYPE_FABRIC &&
                   (int)cudaMemHandleTypePosixFileDescriptor == (int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR &&
                   sizeof(cudaMemFabricHandle_t) == sizeof(CUmemFabricHandle),
               "the runtime's handle types are the driver's");

static void record(struct cmt_hook *h, uint8_t api, cudaError_t r, const void *real, uint64_t addr, uint64_t size,
                   uint64_t aux0, uint64_t aux1, uint64_t aux2)
{
    cmt_record_ipc_call(h, api, r, cmt_runtime_device(real), 0, addr, size, aux0, aux1, aux2,
                        cmt_config.stack_depth != 0);
}

static inline void record_cudaMemPoolExportToShareableHandle(struct cmt_hook *h, cudaError_t r, const void *real,
                                                             void *shareableHandle, cudaMemPool_t memPool,
                                                             enum cudaMemAllocationHandleType handleType,
                                                             unsigned int flags)
{
    (void)flags;
    bool ok = r == cudaSuccess;
    record(h, CMT_API_CUDA_MEM_POOL_EXPORT_TO_SHAREABLE_HANDLE, r, real, (uint64_t)(uintptr_t)memPool, 0,
           ok ? cmt_shareable_fingerprint(shareableHandle, handleType) : 0, (uint64_t)handleType,
           ok ? cmt_shareable_exported_fd(shareableHandle, handleType) : 0);
}

/* shareableHandle is the descriptor itself (cast to a pointer) for a POSIX
 * fd, a pointer to the handle's bytes for a fabric handle. */
static inline void record_cudaMemPoolImportFromShareableHandle(struct cmt_hook *h, cudaError_t r, const void *real,
                                                               cudaMemPool_t *memPool, void *shareableHandle,
                                                               enum cudaMemAllocationHandleType handleType,
                                                               unsigned int flags)
{
    (void)flags;
    uint64_t pool = r == cudaSuccess && memPool ? (uint64_t)(uintptr_t)*memPool : 0;
    record(h, CMT_API_CUDA_MEM_POOL_IMPORT_FROM_SHAREABLE_HANDLE, r, real, pool, 0,
           r == cudaSuccess ? cmt_shareable_fingerprint(shareableHandle, handleType) : 0, (uint64_t)handleType,
           cmt_shareable_imported_fd(shareableHandle, handleType));
}

static inline void record_cudaMemPoolExportPointer(struct cmt_hook *h, cudaError_t r, const void *real,
                                                   struct cudaMemPoolPtrExportData *exportData, void *ptr)
{
    record(h, CMT_API_CUDA_MEM_POOL_EXPORT_POINTER, r, real, (uint64_t)(uintptr_t)ptr, 0,
           r == cudaSuccess && exportData ? cmt_ipc_fingerprint(exportData, sizeof *exportData) : 0, 0, 0);
}

static inline void record_cudaMemPoolImportPointer(struct cmt_hook *h, cudaError_t r, const void *real, void **ptr,
                                                   cudaMemPool_t memPool, struct cudaMemPoolPtrExportData *exportData)
{
    uint64_t addr = r == cudaSuccess && ptr ? (uint64_t)(uintptr_t)*ptr : 0;
    record(h, CMT_API_CUDA_MEM_POOL_IMPORT_POINTER, r, real, addr, addr ? cmt_sampler_range_size(addr) : 0,
           r == cudaSuccess && exportData ? cmt_ipc_fingerprint(exportData, sizeof *exportData) : 0,
           (uint64_t)(uintptr_t)memPool, 0);
}

/* X(name, recorded when, (parameters), (arguments)) */
#define CMT_RUNTIME_POOL_IPC_CALLS(X)                                                                              \
    X(cudaMemPoolExportToShareableHandle, true,                                                                   \
      (void *shareableHandle, cudaMemPool_t memPool, enum cudaMemAllocationHandleType handleType,                 \
       unsigned int flags),                                                                                       \
      (shareableHandle, memPool, handleType, flags))                                                              \
    X(cudaMemPoolImportFromShareableHandle, true,                                                                 \
      (cudaMemPool_t * memPool, void *shareableHandle, enum cudaMemAllocationHandleType handleType,               \
       unsigned int flags),                                                                                       \
      (memPool, shareableHandle, handleType, flags))                                                              \
    X(cudaMemPoolExportPointer, true, (struct cudaMemPoolPtrExportData * exportData, void *ptr), (exportData, ptr)) \
    X(cudaMemPoolImportPointer, true,                                                                             \
      (void **ptr, cudaMemPool_t memPool, struct cudaMemPoolPtrExportData *exportData), (ptr, memPool, exportData))

CMT_RUNTIME_POOL_IPC_CALLS(CMT_RUNTIME_CALL_HOOK)
