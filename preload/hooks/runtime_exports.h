/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_RUNTIME_EXPORTS_H
#define CUMEMTRACE_PRELOAD_RUNTIME_EXPORTS_H

/* The runtime functions the shim exports, each with what its hook forwards
 * to, so that dlsym(handle, "cudaMalloc") on a libcudart the program opened
 * itself (ctypes, a plugin loaded RTLD_LOCAL) gets the shim's hook when the
 * hook calls exactly the function dlsym found: the call is then recorded as
 * the API the program called, cudaMalloc, not as the driver call libcudart
 * makes inside it. Any other pointer passes through untouched.
 *
 * Each hook's file registers it with CMT_RUNTIME_EXPORT(name), after its
 * CMT_REAL_SLOT: a row in the section cmt_runtime_exports, which the linker
 * gathers from every file. */

#include "real_symbols.h"

struct cmt_runtime_export {
    const char *name; /* the exported name, "cudaMalloc", "cudaMallocAsync_ptsz" */
    void *hook;       /* the shim's own function (its hidden alias) */
    void **real;      /* the hook's real function, once found (atomic) */
};

#define CMT_RUNTIME_EXPORT(name)                                                                         \
    CMT_SELF_ALIAS(name)                                                                                 \
    static const struct cmt_runtime_export cmt_runtime_export_##name                                     \
        __attribute__((used, section("cmt_runtime_exports"), aligned(sizeof(void *)))) = {              \
            CMT_STR(name), (void *)&cmt_self_##name, (void **)&real_##name};

/* The row exported as name, or NULL: a cheap test made on every dlsym
 * (CMT_EARLY: see real_symbols.h). */
__attribute__((no_sanitize("address", "undefined"))) const struct cmt_runtime_export *
cmt_runtime_hooks_find_export(const char *name);

/* dlsym(handle, name) found p (name is one of our runtime exports, handle a
 * real handle): our hook when it forwards to exactly p, else p. The hook's
 * real function, if not found yet, is looked for now as its first call
 * would, from the object p lies in. */
void *cmt_runtime_hooks_substitute_dlsym(void *handle, const char *name, void *p);

#endif
