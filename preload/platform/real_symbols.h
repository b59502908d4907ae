/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_PRELOAD_REAL_SYMBOLS_H
#define CUMEMTRACE_PRELOAD_REAL_SYMBOLS_H

/* Finding the real functions behind our hooks, at run time: the shim never
 * links cudart or libcuda. */

#define CMT_EXPORT __attribute__((visibility("default")))

/* For code on the path of every dlsym call: it may run before anything else
 * in the process is initialised, the address sanitizer's runtime included
 * (which resolves its interceptors with dlsym, reaching the shim's), so it is
 * not instrumented and calls nothing of the C library but dlvsym. */
#define CMT_EARLY __attribute__((no_sanitize("address", "undefined")))
/* A hidden alias of an exported function: its address is the shim's own
 * function. Taking &name inside the shim would go through the GOT and give
 * whichever definition comes first in the global scope, another
 * interposer's cuMemAlloc_v2 when that one is preloaded first. */
#define CMT_SELF_ALIAS(name) \
    extern __typeof__(name) cmt_self_##name __attribute__((alias(#name), visibility("hidden")));
#define CMT_STR_(x) #x
#define CMT_STR(x) CMT_STR_(x) /* stringizes after macro expansion (_ptsz names) */

/* glibc's own dlsym, never the shim's (which the shim exports: see
 * dlsym_entry.S). Called from the shim, RTLD_NEXT and RTLD_DEFAULT are
 * relative to the shim. */
void *cmt_real_dlsym(void *handle, const char *name);

/* glibc's dlclose, never the shim's (hooks/dlclose_hook.c): the shim's own
 * RTLD_NOLOAD handles unload nothing, so they must not make it forget its
 * stacks. */
int cmt_real_dlclose(void *handle);

/* The CUDA driver the hooks forward to. The driver hooks tell each real
 * driver function they learn (cmt_real_get_driver does for the named ones);
 * the sampler asks for the driver's handle: libcuda.so.1 if loaded, else the
 * object of a function told (a driver loaded by full path). RTLD_NOLOAD:
 * never loads it; NULL while no driver is known. The handle's reference
 * keeps the driver mapped. */
void cmt_real_symbols_note_driver(const void *fn);
void *cmt_real_symbols_driver_handle(void);

/* glibc's dlsym function itself (void * to keep <dlfcn.h> out), found on
 * first use; NULL when the C library is not glibc. */
CMT_EARLY void *cmt_glibc_dlsym(void);

/* The definition of name that the hook shadows: the next one after the shim
 * in the global search order; failing that (a libcudart loaded with
 * RTLD_LOCAL by dlopen, as Python extension modules are), the one in the
 * calling object's own dependency scope; failing that, the one in a library
 * the program looked our exports up in by handle (a driver loaded
 * RTLD_LOCAL whose own calls bind to the shim). Never returns one of the
 * shim's own functions. NULL when there is none (warned once per name). */
void *cmt_find_real(const char *name, const void *caller);

/* A library the program looked one of the shim's exports up in by handle:
 * cmt_find_real searches it too, last (a library loaded RTLD_LOCAL). */
void cmt_real_symbols_remember_scope(void *handle);

/* name as defined next to sibling (a real function we already hold): the
 * same libcudart that served the allocation answers the device query. */
void *cmt_find_sibling(const char *name, const void *sibling);

/* *slot, resolving it on first use (racing threads store the same value). */
static inline void *cmt_real_get(void **slot, const char *name, const void *caller)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (__builtin_expect(p != 0, 1))
        return p;
    p = cmt_find_real(name, caller);
    if (p)
        __atomic_store_n(slot, p, __ATOMIC_RELEASE);
    return p;
}

/* cmt_real_get for a driver function: the first time, it tells the driver
 * (cmt_real_symbols_note_driver). */
static inline void *cmt_real_get_driver(void **slot, const char *name, const void *caller)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (__builtin_expect(p != 0, 1))
        return p;
    p = cmt_real_get(slot, name, caller);
    cmt_real_symbols_note_driver(p);
    return p;
}

#define CMT_REAL_SLOT(fn) static __typeof__(fn) *real_##fn
#define CMT_REAL(fn) ((__typeof__(fn) *)cmt_real_get((void **)&real_##fn, CMT_STR(fn), __builtin_return_address(0)))
#define CMT_REAL_DRIVER(fn) \
    ((__typeof__(fn) *)cmt_real_get_driver((void **)&real_##fn, CMT_STR(fn), __builtin_return_address(0)))

/* True when addr lies in the shim's own text. */
int cmt_is_own_address(const void *addr);

#endif
