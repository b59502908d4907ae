/* SPDX-License-Identifier: MIT */
/* Memory shared between processes, runtime API (docs/trace-format.md,
 * "IPC"): cudaIpcGetMemHandle (the exporter: which allocation, and a
 * fingerprint of the handle that the importer's trace will hold too),
 * cudaIpcOpenMemHandle and cudaIpcCloseMemHandle (the importer: where the
 * mapping lies, how large, closed or not). Nothing here is memory of this
 * process; the analyzer keeps it apart. With the dynamic runtime the
 * driver call underneath passes through (one event per user call). Each
 * hook is a row of the lists below, expanded by the skeletons of
 * runtime_hooks.h; what it records is its record_NAME. */
#include <cuda_runtime_api.h>

#include "hook_record.h"
#include "real_symbols.h"
#include "runtime_device.h"
#include "runtime_hooks.h"
#include "sampler.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == 64, "a CUDA IPC handle is 64 bytes");

static inline void record_cudaIpcGetMemHandle(struct cmt_hook *h, cudaError_t r, const void *real,
                                              cudaIpcMemHandle_t *handle, void *devPtr)
{
    cmt_record_ipc_call(h, CMT_API_CUDA_IPC_GET_MEM_HANDLE, r, cmt_runtime_device(real), 0, (uint64_t)(uintptr_t)devPtr,
                        0, r == cudaSuccess && handle ? cmt_ipc_fingerprint(handle, sizeof *handle) : 0, 0, 0,
                        cmt_config.stack_depth != 0);
}

static inline void record_cudaIpcOpenMemHandle(struct cmt_hook *h, cudaError_t r, const void *real, void **devPtr,
                                               cudaIpcMemHandle_t handle, unsigned int flags)
{
    uint64_t addr = r == cudaSuccess && devPtr ? (uint64_t)(uintptr_t)*devPtr : 0;
    cmt_record_ipc_call(h, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, r, cmt_runtime_device(real), 0, addr,
                        addr ? cmt_sampler_range_size(addr) : 0, cmt_ipc_fingerprint(&handle, sizeof handle), flags, 0,
                        cmt_config.stack_depth != 0);
}

/* Closed: the time before the call (the address may be mapped again once
 * it returns). */
static inline struct cmt_call_start begin_cudaIpcCloseMemHandle(struct cmt_hook *h, void *devPtr)
{
    (void)devPtr;
    return (struct cmt_call_start){.ts = cmt_event_ts(h->thread)};
}

static inline void record_cudaIpcCloseMemHandle(struct cmt_hook *h, const struct cmt_call_start *start,
                                                cudaError_t r, const void *real, void *devPtr)
{
    cmt_record_ipc_call(h, CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, r, cmt_runtime_device(real), start->ts,
                        (uint64_t)(uintptr_t)devPtr, 0, 0, 0, 0, cmt_config.free_stacks);
}

/* X(name, recorded when, (parameters), (arguments)) */
#define CMT_RUNTIME_IPC_CALLS(X)                                                                                \
    X(cudaIpcGetMemHandle, true, (cudaIpcMemHandle_t * handle, void *devPtr), (handle, devPtr))                \
    X(cudaIpcOpenMemHandle, true, (void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags),              \
      (devPtr, handle, flags))
#define CMT_RUNTIME_IPC_GIVE_UPS(X) X(cudaIpcCloseMemHandle, true, (void *devPtr), (devPtr))

CMT_RUNTIME_IPC_CALLS(CMT_RUNTIME_CALL_HOOK)
CMT_RUNTIME_IPC_GIVE_UPS(CMT_RUNTIME_GIVE_UP_HOOK)
