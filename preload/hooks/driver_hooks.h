/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_DRIVER_HOOKS_H
#define CUMEMTRACE_PRELOAD_DRIVER_HOOKS_H

/* The driver entry points the shim hooks, one table entry per ABI (a
 * per-thread-default-stream twin is an ABI of its own: a different real
 * function). A program reaches the driver three ways, and each entry serves
 * all three:
 *   - by name, linked with -lcuda: the shim exports export_name (named_hook),
 *     which forwards to the next definition after the shim (named_real);
 *   - through cuGetProcAddress (NVIDIA's runtime, static or dynamic, CuPy,
 *     cudaGetDriverEntryPoint): the shim's cuGetProcAddress wrappers hand out
 *     proc_hook where the driver returned proc_real;
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

/* Every exported name, in table order. */
#define CMT_DRIVER_HOOK_NAMES(X)                                                                             \
    X(cuGetProcAddress) X(cuGetProcAddress_v2) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocPitch_v2)        \
    X(cuMemAllocManaged) X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemAllocAsync)         \
    X(cuMemAllocAsync_ptsz) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuMemAllocFromPoolAsync)               \
    X(cuMemAllocFromPoolAsync_ptsz) X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuMemUnmap)                  \
    X(cuMemAddressReserve) X(cuMemAddressFree) X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuArrayDestroy)                       \
    X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolTrimTo)                                                 \
    X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle_v2) X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle)                \
    X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle)                                         \
    X(cuMemPoolExportToShareableHandle) X(cuMemPoolImportFromShareableHandle) X(cuMemPoolExportPointer)       \
    X(cuMemPoolImportPointer)                                                                                 \
    X(cuCtxSetCurrent) X(cuCtxPushCurrent_v2) X(cuCtxPushCurrent) X(cuCtxPopCurrent_v2) X(cuCtxPopCurrent)         \
    X(cuCtxCreate) X(cuCtxCreate_v2) X(cuCtxCreate_v3) X(cuCtxCreate_v4) X(cuCtxDestroy_v2) X(cuCtxDestroy)         \
    X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxRelease) X(cuDevicePrimaryCtxReset_v2)                    \
    X(cuDevicePrimaryCtxReset)

enum cmt_driver_hook_index {
#define CMT_HOOK_INDEX(name) CMT_HOOK_##name,
    CMT_DRIVER_HOOK_NAMES(CMT_HOOK_INDEX)
#undef CMT_HOOK_INDEX
    CMT_HOOK_COUNT
};

enum cmt_resolve_state {
    CMT_RESOLVE_NOT_YET = 0,
    CMT_RESOLVE_RUNNING = 1, /* one thread is asking the driver; others wait */
    CMT_RESOLVE_DONE = 2     /* proc_real is final (NULL: the driver has no such entry point) */
};

struct cmt_driver_hook {
    const char *symbol;      /* the base name cuGetProcAddress is asked for: "cuMemAlloc" */
    int abi_version;         /* the CUDA version that introduced the ABI our hooks have (the
                              * version in cudaTypedefs.h's PFN_ name): 3020 for cuMemAlloc_v2 */
    uint64_t stream_flags;   /* CU_GET_PROC_ADDRESS_LEGACY_STREAM or _PER_THREAD_DEFAULT_STREAM */
    const char *export_name; /* the name libcuda exports this ABI under: "cuMemAlloc_v2" */
    void *named_hook;        /* the shim's export of export_name */
    void **named_real;       /* what named_hook forwards to, once found (atomic) */
    void *proc_hook;         /* handed out where cuGetProcAddress returned proc_real */
    void *proc_real;         /* the driver's cuGetProcAddress(symbol, abi_version, stream_flags) */
    int proc_state;          /* enum cmt_resolve_state (atomic) */
    void *dlsym_hook;        /* cuGetProcAddress entries only: handed out by dlsym for dlsym_real */
    void *dlsym_real;        /* the first definition dlsym found that no other hook forwards to */
};

/* Defined in hooks_driver.c. */
extern struct cmt_driver_hook cmt_driver_hooks[CMT_HOOK_COUNT];

/* A real cuGetProcAddress to ask for reference pointers: v2 when known. */
struct cmt_proc_resolver {
    PFN_cuGetProcAddress_v11030 v1;
    PFN_cuGetProcAddress_v12000 v2;
};

/* What a proc hook calls: set before the hook was ever handed out. */
static inline void *cmt_driver_hook_proc_real(enum cmt_driver_hook_index i)
{
    return __atomic_load_n(&cmt_driver_hooks[i].proc_real, __ATOMIC_ACQUIRE);
}

static inline void *cmt_driver_hook_dlsym_real(enum cmt_driver_hook_index i)
{
    return __atomic_load_n(&cmt_driver_hooks[i].dlsym_real, __ATOMIC_ACQUIRE);
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
