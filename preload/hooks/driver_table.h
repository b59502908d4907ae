/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_DRIVER_TABLE_H
#define CUMEMTRACE_PRELOAD_DRIVER_TABLE_H

/* The driver entry points the shim hooks, one table entry per ABI (a
 * per-thread-default-stream twin is an ABI of its own: a different real
 * function). A program reaches the driver three ways, and each entry serves
 * all three:
 *   - by name, linked with -lcuda: the shim exports export_name (named_hook),
 *     which forwards to the next definition after the shim (reals.named);
 *   - through cuGetProcAddress (NVIDIA's runtime, static or dynamic, CuPy,
 *     cudaGetDriverEntryPoint): the shim's cuGetProcAddress wrappers hand out
 *     proc_hook where the driver returned reals.proc;
 *   - through dlsym(handle, export_name) (ctypes, Numba, the runtime's own
 *     dlsym of cuGetProcAddress_v2): the shim's dlsym hands out whichever of
 *     our hooks forwards to exactly the pointer dlsym found.
 * A hook is only ever handed out in place of the very function it calls, so
 * the caller runs the same code with the same ABI: an older ABI (cuMemAlloc
 * asked for at cudaVersion < 3020 is the 32-bit v1) or a newer one than the
 * shim knows returns a different pointer and passes through untouched. */

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stdint.h>

/* The driver entry points the shim hooks, one list: the index enum, the
 * hooks (hooks_driver.c defines both copies of each from it, with its ABI
 * checked against cudaTypedefs.h's PFN_ type) and the table's rows are
 * expanded from it. The lookup function itself comes first, by hand
 * (driver_lookup.c). */
#define CMT_LEGACY_STREAM CU_GET_PROC_ADDRESS_LEGACY_STREAM
#define CMT_PER_THREAD_STREAM CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

/* X(exported name, base name, ABI version, PFN_ suffix, stream flags, implementation, (parameters), arguments...) */
#define CMT_DRIVER_MEMORY_HOOKS(X)                                                                                    \
    X(cuMemAlloc_v2, cuMemAlloc, 3020, , CMT_LEGACY_STREAM, mem_alloc, (CUdeviceptr * dptr, size_t bytesize), dptr, bytesize) \
    X(cuMemFree_v2, cuMemFree, 3020, , CMT_LEGACY_STREAM, mem_free, (CUdeviceptr dptr), dptr)                                 \
    X(cuMemAllocPitch_v2, cuMemAllocPitch, 3020, , CMT_LEGACY_STREAM, mem_alloc_pitch,                                        \
      (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height, unsigned int ElementSizeBytes),    \
      dptr, pPitch, WidthInBytes, Height, ElementSizeBytes)                                                        \
    X(cuMemAllocManaged, cuMemAllocManaged, 6000, , CMT_LEGACY_STREAM, mem_alloc_managed,                                     \
      (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), dptr, bytesize, flags)                            \
    X(cuMemAllocHost_v2, cuMemAllocHost, 3020, , CMT_LEGACY_STREAM, mem_alloc_host, (void **pp, size_t bytesize), pp,         \
      bytesize)                                                                                                    \
    X(cuMemHostAlloc, cuMemHostAlloc, 2020, , CMT_LEGACY_STREAM, mem_host_alloc, (void **pp, size_t bytesize, unsigned int Flags), \
      pp, bytesize, Flags)                                                                                         \
    X(cuMemFreeHost, cuMemFreeHost, 2000, , CMT_LEGACY_STREAM, mem_free_host, (void *p), p)                                   \
    X(cuMemAllocAsync, cuMemAllocAsync, 11020, , CMT_LEGACY_STREAM, mem_alloc_async,                                          \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), dptr, bytesize, hStream)                            \
    X(cuMemAllocAsync_ptsz, cuMemAllocAsync, 11020, _ptsz, CMT_PER_THREAD_STREAM, mem_alloc_async,                            \
      (CUdeviceptr * dptr, size_t bytesize, CUstream hStream), dptr, bytesize, hStream)                            \
    X(cuMemFreeAsync, cuMemFreeAsync, 11020, , CMT_LEGACY_STREAM, mem_free_async, (CUdeviceptr dptr, CUstream hStream), dptr, \
      hStream)                                                                                                     \
    X(cuMemFreeAsync_ptsz, cuMemFreeAsync, 11020, _ptsz, CMT_PER_THREAD_STREAM, mem_free_async,                               \
      (CUdeviceptr dptr, CUstream hStream), dptr, hStream)                                                         \
    X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 11020, , CMT_LEGACY_STREAM, mem_alloc_from_pool_async,                \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), dptr, bytesize, pool, hStream)   \
    X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 11020, _ptsz, CMT_PER_THREAD_STREAM, mem_alloc_from_pool_async,  \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream), dptr, bytesize, pool, hStream)   \
    X(cuMemCreate, cuMemCreate, 10020, , CMT_LEGACY_STREAM, mem_create,                                                       \
      (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,                        \
       unsigned long long flags),                                                                                  \
      handle, size, prop, flags)                                                                                   \
    X(cuMemRelease, cuMemRelease, 10020, , CMT_LEGACY_STREAM, mem_release, (CUmemGenericAllocationHandle handle), handle)     \
    X(cuMemMap, cuMemMap, 10020, , CMT_LEGACY_STREAM, mem_map,                                                                \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,                           \
       unsigned long long flags),                                                                                  \
      ptr, size, offset, handle, flags)                                                                            \
    X(cuMemUnmap, cuMemUnmap, 10020, , CMT_LEGACY_STREAM, mem_unmap, (CUdeviceptr ptr, size_t size), ptr, size)               \
    X(cuMemAddressReserve, cuMemAddressReserve, 10020, , CMT_LEGACY_STREAM, mem_address_reserve,                              \
      (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags), ptr, size,   \
      alignment, addr, flags)                                                                                      \
    X(cuMemAddressFree, cuMemAddressFree, 10020, , CMT_LEGACY_STREAM, mem_address_free, (CUdeviceptr ptr, size_t size), ptr,  \
      size)                                                                                                        \
    X(cuArrayCreate_v2, cuArrayCreate, 3020, , CMT_LEGACY_STREAM, array_create,                                               \
      (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray), pHandle, pAllocateArray)                   \
    X(cuArray3DCreate_v2, cuArray3DCreate, 3020, , CMT_LEGACY_STREAM, array_3d_create,                                        \
      (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray), pHandle, pAllocateArray)                 \
    X(cuArrayDestroy, cuArrayDestroy, 2000, , CMT_LEGACY_STREAM, array_destroy, (CUarray hArray), hArray)                     \
    X(cuMemPoolCreate, cuMemPoolCreate, 11020, , CMT_LEGACY_STREAM, mem_pool_create,                                          \
      (CUmemoryPool * pool, const CUmemPoolProps *poolProps), pool, poolProps)                                     \
    X(cuMemPoolDestroy, cuMemPoolDestroy, 11020, , CMT_LEGACY_STREAM, mem_pool_destroy, (CUmemoryPool pool), pool)            \
    X(cuMemPoolTrimTo, cuMemPoolTrimTo, 11020, , CMT_LEGACY_STREAM, mem_pool_trim_to, (CUmemoryPool pool, size_t minBytesToKeep), \
      pool, minBytesToKeep) \
    X(cuIpcGetMemHandle, cuIpcGetMemHandle, 4010, , CMT_LEGACY_STREAM, ipc_get_mem_handle,                                   \
      (CUipcMemHandle * pHandle, CUdeviceptr dptr), pHandle, dptr)                                                 \
    X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, , CMT_LEGACY_STREAM, ipc_open_mem_handle,                            \
      (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), pdptr, handle, Flags)                      \
    X(cuIpcOpenMemHandle, cuIpcOpenMemHandle, 4010, , CMT_LEGACY_STREAM, ipc_open_mem_handle,                                \
      (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int Flags), pdptr, handle, Flags)                      \
    X(cuIpcCloseMemHandle, cuIpcCloseMemHandle, 4010, , CMT_LEGACY_STREAM, ipc_close_mem_handle, (CUdeviceptr dptr), dptr)   \
    X(cuMemExportToShareableHandle, cuMemExportToShareableHandle, 10020, , CMT_LEGACY_STREAM, mem_export_to_shareable_handle, \
      (void *shareableHandle, CUmemGenericAllocationHandle handle, CUmemAllocationHandleType handleType,          \
       unsigned long long flags),                                                                                  \
      shareableHandle, handle, handleType, flags)                                                                  \
    X(cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, 10020, , CMT_LEGACY_STREAM,                             \
      mem_import_from_shareable_handle,                                                                            \
      (CUmemGenericAllocationHandle * handle, void *osHandle, CUmemAllocationHandleType shHandleType), handle,     \
      osHandle, shHandleType)                                                                                      \
    X(cuMemPoolExportToShareableHandle, cuMemPoolExportToShareableHandle, 11020, , CMT_LEGACY_STREAM,                         \
      mem_pool_export_to_shareable_handle,                                                                         \
      (void *handle_out, CUmemoryPool pool, CUmemAllocationHandleType handleType, unsigned long long flags),       \
      handle_out, pool, handleType, flags)                                                                         \
    X(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle, 11020, , CMT_LEGACY_STREAM,                     \
      mem_pool_import_from_shareable_handle,                                                                       \
      (CUmemoryPool * pool_out, void *handle, CUmemAllocationHandleType handleType, unsigned long long flags),     \
      pool_out, handle, handleType, flags)                                                                         \
    X(cuMemPoolExportPointer, cuMemPoolExportPointer, 11020, , CMT_LEGACY_STREAM, mem_pool_export_pointer,                   \
      (CUmemPoolPtrExportData * shareData_out, CUdeviceptr ptr), shareData_out, ptr)                              \
    X(cuMemPoolImportPointer, cuMemPoolImportPointer, 11020, , CMT_LEGACY_STREAM, mem_pool_import_pointer,                   \
      (CUdeviceptr * ptr_out, CUmemoryPool pool, CUmemPoolPtrExportData * shareData), ptr_out, pool, shareData)

/* Every ABI of the calls that change a thread's current context. */
#define CMT_CONTEXT_HOOKS(X)                                                                                       \
    X(cuCtxSetCurrent, cuCtxSetCurrent, 4000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD, (CUcontext ctx), ctx)                          \
    X(cuCtxPushCurrent_v2, cuCtxPushCurrent, 4000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD, (CUcontext ctx), ctx)                     \
    X(cuCtxPushCurrent, cuCtxPushCurrent, 2000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD, (CUcontext ctx), ctx)                        \
    X(cuCtxPopCurrent_v2, cuCtxPopCurrent, 4000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD, (CUcontext * pctx), pctx)                      \
    X(cuCtxPopCurrent, cuCtxPopCurrent, 2000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD, (CUcontext * pctx), pctx)                         \
    X(cuCtxCreate, cuCtxCreate, 2000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD, (CUcontext * pctx, unsigned int flags, CUdevice dev), \
      pctx, flags, dev)                                                                                            \
    X(cuCtxCreate_v2, cuCtxCreate, 3020, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD,                                                  \
      (CUcontext * pctx, unsigned int flags, CUdevice dev), pctx, flags, dev)                                      \
    X(cuCtxCreate_v3, cuCtxCreate, 11040, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD,                                                 \
      (CUcontext * pctx, CUexecAffinityParam * paramsArray, int numParams, unsigned int flags, CUdevice dev),      \
      pctx, paramsArray, numParams, flags, dev)                                                                    \
    X(cuCtxCreate_v4, cuCtxCreate, 12050, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_THREAD,                                                 \
      (CUcontext * pctx, CUctxCreateParams * ctxCreateParams, unsigned int flags, CUdevice dev), pctx,             \
      ctxCreateParams, flags, dev)                                                                                 \
    X(cuCtxDestroy_v2, cuCtxDestroy, 4000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_ALL, (CUcontext ctx), ctx)                            \
    X(cuCtxDestroy, cuCtxDestroy, 2000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_ALL, (CUcontext ctx), ctx)                               \
    X(cuDevicePrimaryCtxRelease_v2, cuDevicePrimaryCtxRelease, 11000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_ALL, (CUdevice dev), dev) \
    X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease, 7000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_ALL, (CUdevice dev), dev) \
    X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset, 11000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_ALL, (CUdevice dev), dev) \
    X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, 7000, , CMT_LEGACY_STREAM, CMT_CONTEXT_FORGETS_ALL, (CUdevice dev), dev)

/* Memory first, then the context calls. */
#define CMT_DRIVER_HOOKS(X) CMT_DRIVER_MEMORY_HOOKS(X) CMT_CONTEXT_HOOKS(X)

enum cmt_driver_hook_index {
    CMT_HOOK_cuGetProcAddress,
    CMT_HOOK_cuGetProcAddress_v2,
#define CMT_HOOK_INDEX(name, ...) CMT_HOOK_##name,
    CMT_DRIVER_HOOKS(CMT_HOOK_INDEX)
#undef CMT_HOOK_INDEX
    CMT_HOOK_COUNT
};

enum cmt_resolve_state {
    CMT_RESOLVE_NOT_YET = 0,
    CMT_RESOLVE_RUNNING = 1, /* one thread is asking the driver; others wait */
    CMT_RESOLVE_DONE = 2     /* reals.proc is final (NULL: the driver has no such entry point) */
};

/* What a hook is: fixed at build time. */
struct cmt_driver_hook {
    const char *symbol;      /* the base name cuGetProcAddress is asked for: "cuMemAlloc" */
    int abi_version;         /* the CUDA version that introduced the ABI our hooks have (the
                              * version in cudaTypedefs.h's PFN_ name): 3020 for cuMemAlloc_v2 */
    uint64_t stream_flags;   /* CU_GET_PROC_ADDRESS_LEGACY_STREAM or _PER_THREAD_DEFAULT_STREAM */
    const char *export_name; /* the name libcuda exports this ABI under: "cuMemAlloc_v2" */
    void *named_hook;        /* the shim's export of export_name */
    void *proc_hook;         /* handed out where cuGetProcAddress returned reals.proc */
    void *dlsym_hook;        /* cuGetProcAddress entries only: handed out by dlsym for reals.dlsym */
};

/* What a hook forwards to, learnt as the program runs (every field atomic). */
struct cmt_driver_hook_reals {
    void *named;    /* what named_hook forwards to, once found */
    void *proc;     /* the driver's cuGetProcAddress(symbol, abi_version, stream_flags) */
    int proc_state; /* enum cmt_resolve_state */
    void *dlsym;    /* the first definition dlsym found that no other hook forwards to */
};

/* The table, by index: its rows in driver_lookup.c (they name the hooks),
 * what they forward to in hooks_driver.c (the hooks read it), so that the
 * hooks never depend on the lookup that hands them out. */
extern const struct cmt_driver_hook cmt_driver_hooks[CMT_HOOK_COUNT];
extern struct cmt_driver_hook_reals cmt_driver_hook_reals[CMT_HOOK_COUNT];

/* The two copies of each hook (hooks_driver.c defines them), for the
 * table's rows: the export's hidden alias and the copy cuGetProcAddress
 * hands out. */
#define CMT_DECLARE_HOOKS(name, base, version, suffix, flags, impl, params, ...)     \
    extern CUresult cmt_self_##name params __attribute__((visibility("hidden"))); \
    extern CUresult cmt_proc_##name params __attribute__((visibility("hidden")));
CMT_DRIVER_HOOKS(CMT_DECLARE_HOOKS)
#undef CMT_DECLARE_HOOKS

/* A real cuGetProcAddress to ask for reference pointers: v2 when known. */
struct cmt_proc_resolver {
    PFN_cuGetProcAddress_v11030 v1;
    PFN_cuGetProcAddress_v12000 v2;
};

/* What the named export of hook `name` forwards to: the next definition
 * after the shim, found at its first call (real_symbols.h). In the hook
 * itself: the caller's address names who asked when there is none. */
#define CMT_NAMED_REAL(name)                                                                       \
    ((__typeof__(&name))cmt_real_get_driver(&cmt_driver_hook_reals[CMT_HOOK_##name].named, #name, \
                                            __builtin_return_address(0)))

/* What a proc hook calls: set before the hook was ever handed out. */
static inline void *cmt_driver_hook_proc_real(enum cmt_driver_hook_index i)
{
    return __atomic_load_n(&cmt_driver_hook_reals[i].proc, __ATOMIC_ACQUIRE);
}

static inline void *cmt_driver_hook_dlsym_real(enum cmt_driver_hook_index i)
{
    return __atomic_load_n(&cmt_driver_hook_reals[i].dlsym, __ATOMIC_ACQUIRE);
}

/* cuGetProcAddress returned pfn for symbol: our hook when one of ours
 * forwards to exactly pfn, else pfn. resolver asks the driver for reference
 * pointers the first time a symbol is seen. */
void *cmt_driver_hooks_substitute_proc(const char *symbol, void *pfn, const struct cmt_proc_resolver *resolver);

/* The entry exported as name, or NULL: a cheap test made on every dlsym
 * (CMT_EARLY: see real_symbols.h). */
__attribute__((no_sanitize("address", "undefined"))) const struct cmt_driver_hook *
cmt_driver_hooks_find_export(const char *name);

/* dlsym(handle, name) found p (name is one of our exports): our hook when
 * one of ours forwards to exactly p, else p. handle is a real handle (not
 * RTLD_DEFAULT or RTLD_NEXT: those go to glibc untouched). */
void *cmt_driver_hooks_substitute_dlsym(void *handle, const char *name, void *p);

/* True when addr is inside the shim's own mapped text. */
bool cmt_driver_hooks_is_ours(const void *addr);

/* In a forked child: entries a parent thread was resolving start over. */
void cmt_driver_hooks_fork_child(void);

#endif
