/* SPDX-License-Identifier: MIT */
/* Memory shared between processes, runtime API (docs/trace-format.md,
 * "IPC"): cudaIpcGetMemHandle (the exporter: which allocation, and a
 * fingerprint of the handle that the importer's trace will hold too),
 * cudaIpcOpenMemHandle and cudaIpcCloseMemHandle (the importer: where the
 * mapping lies, how large, closed or not). Nothing here is memory of this
 * process; the analyzer keeps it apart. With the dynamic runtime the
 * driver call underneath passes through (one event per user call). */
#include <cuda_runtime_api.h>

#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_exports.h"
#include "runtime_device.h"
#include "sampler.h"

CMT_REAL_SLOT(cudaIpcGetMemHandle);
CMT_REAL_SLOT(cudaIpcOpenMemHandle);
CMT_REAL_SLOT(cudaIpcCloseMemHandle);

_Static_assert(sizeof(cudaIpcMemHandle_t) == 64, "a CUDA IPC handle is 64 bytes");

CMT_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    __typeof__(cudaIpcGetMemHandle) *real = CMT_REAL(cudaIpcGetMemHandle);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(handle, devPtr);
    if (rec)
        cmt_record_ipc_call(&h, CMT_API_CUDA_IPC_GET_MEM_HANDLE, r, cmt_runtime_device((const void *)real), 0,
                            (uint64_t)(uintptr_t)devPtr, 0,
                            r == cudaSuccess && handle ? cmt_ipc_fingerprint(handle, sizeof *handle) : 0, 0, 0,
                            cmt_config.stack_depth != 0);
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaIpcGetMemHandle)

CMT_EXPORT cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    __typeof__(cudaIpcOpenMemHandle) *real = CMT_REAL(cudaIpcOpenMemHandle);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    cudaError_t r = real(devPtr, handle, flags);
    if (rec) {
        uint64_t addr = r == cudaSuccess && devPtr ? (uint64_t)(uintptr_t)*devPtr : 0;
        cmt_record_ipc_call(&h, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, r, cmt_runtime_device((const void *)real), 0, addr,
                            addr ? cmt_sampler_range_size(addr) : 0, cmt_ipc_fingerprint(&handle, sizeof handle), flags,
                            0, cmt_config.stack_depth != 0);
    }
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaIpcOpenMemHandle)

CMT_EXPORT cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    __typeof__(cudaIpcCloseMemHandle) *real = CMT_REAL(cudaIpcCloseMemHandle);
    if (!real)
        return cudaErrorInitializationError;
    struct cmt_hook h;
    bool rec = cmt_hook_enter(&h, CMT_LAYER_RUNTIME);
    uint64_t ts = rec ? cmt_event_ts(h.thread) : 0;
    cudaError_t r = real(devPtr);
    if (rec)
        cmt_record_ipc_call(&h, CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, r, cmt_runtime_device((const void *)real), ts,
                            (uint64_t)(uintptr_t)devPtr, 0, 0, 0, 0, cmt_config.free_stacks);
    cmt_hook_leave(&h);
    return r;
}
CMT_RUNTIME_EXPORT(cudaIpcCloseMemHandle)
