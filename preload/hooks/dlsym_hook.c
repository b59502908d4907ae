/* SPDX-License-Identifier: MIT */
/* Where the shim's dlsym (dlsym_entry.S) sends each call.
 *
 * Only one kind of look-up is ours: a driver entry point or a runtime
 * function we hook, by its exported name, on a real handle (dlopen's),
 * which is how NVIDIA's static runtime fetches cuGetProcAddress_v2, how
 * ctypes, Numba and the like fetch cuMemAlloc_v2, and how ctypes fetches
 * cudaMalloc from a libcudart it opened (runtime_exports.h). Everything else, including every RTLD_DEFAULT and
 * RTLD_NEXT look-up, jumps straight into glibc's dlsym with the caller's
 * return address, so glibc resolves it relative to the real caller:
 *   - RTLD_NEXT is how interposers chain; another LD_PRELOAD library asking
 *     for the next cudaMalloc or cuMemAlloc_v2 gets exactly the definition
 *     after itself, in either preload order, never a substitute;
 *   - RTLD_DEFAULT already finds the shim's exports first (the shim is
 *     preloaded), so there is nothing to substitute. */
#include <dlfcn.h>
#include <stdbool.h>

#include "driver_table.h"
#include "log.h"
#include "real_symbols.h"
#include "runtime_exports.h"

typedef void *(*dlsym_fn)(void *, const char *);

/* Hidden (-fvisibility=hidden), called from dlsym_entry.S only. */
dlsym_fn cmt_dlsym_target(void *handle, const char *name);

static void *dlsym_interposed(void *handle, const char *name)
{
    cmt_real_symbols_remember_scope(handle);
    void *p = cmt_real_dlsym(handle, name);
    if (cmt_runtime_hooks_find_export(name))
        return cmt_runtime_hooks_substitute_dlsym(handle, name, p);
    return cmt_driver_hooks_substitute_dlsym(handle, name, p);
}

/* Without glibc's dlsym every look-up fails: say so once. */
static void *dlsym_unavailable(void *handle, const char *name)
{
    (void)handle;
    static int warned;
    if (!__atomic_exchange_n(&warned, 1, __ATOMIC_RELAXED))
        cmt_log_warning("glibc's dlsym was not found (dlvsym(RTLD_NEXT, \"dlsym\", ...) failed): every dlsym, "
                        "first \"%s\", returns NULL; run without LD_PRELOAD of libcumemtrace.so",
                        name ? name : "(null)");
    return NULL;
}

dlsym_fn cmt_dlsym_target(void *handle, const char *name)
{
    dlsym_fn glibc = (dlsym_fn)cmt_glibc_dlsym();
    if (!glibc)
        return dlsym_unavailable;
    if (handle == RTLD_DEFAULT || handle == RTLD_NEXT || !name ||
        (!cmt_driver_hooks_find_export(name) && !cmt_runtime_hooks_find_export(name)))
        return glibc;
    return dlsym_interposed;
}
