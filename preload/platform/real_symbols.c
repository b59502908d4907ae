/* SPDX-License-Identifier: MIT */
#include "real_symbols.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "log.h"

typedef void *(*dlsym_fn)(void *, const char *);

CMT_EARLY void *cmt_glibc_dlsym(void)
{
    static dlsym_fn real;
    dlsym_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        /* dlvsym is not wrapped, so it reaches glibc's dlsym whatever the
         * shim exports. glibc >= 2.34 has dlsym in libc (GLIBC_2.34), older
         * ones in libdl under the architecture's base version (GLIBC_2.2.5
         * on x86_64, GLIBC_2.17 on aarch64); ask for each. */
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
        for (size_t i = 0; !fn && i < sizeof versions / sizeof versions[0]; i++)
            fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
        if (!fn)
            return NULL; /* not glibc: unsupported */
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return (void *)fn;
}

void *cmt_real_dlsym(void *handle, const char *name)
{
    dlsym_fn fn = (dlsym_fn)cmt_glibc_dlsym();
    return fn ? fn(handle, name) : NULL;
}

typedef int (*dlclose_fn)(void *);

int cmt_real_dlclose(void *handle)
{
    static dlclose_fn real;
    dlclose_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        /* As for dlsym: glibc >= 2.34 has it in libc, older ones in libdl
         * under the architecture's base version. */
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
        for (size_t i = 0; !fn && i < sizeof versions / sizeof versions[0]; i++)
            fn = (dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", versions[i]);
        if (!fn)
            return -1; /* not glibc: nothing was unloaded */
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn(handle);
}

/* A function of the CUDA driver the hooks forward to (atomic; the first
 * one learnt is kept). */
static void *driver_function;

void cmt_real_symbols_note_driver(const void *fn)
{
    void *expected = NULL;
    if (fn)
        __atomic_compare_exchange_n(&driver_function, &expected, (void *)fn, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
}

void *cmt_real_symbols_driver_handle(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (h)
        return h;
    /* Loaded under another name (a full path): the object of a driver
     * function a hook forwards to tells which. */
    void *p = __atomic_load_n(&driver_function, __ATOMIC_ACQUIRE);
    Dl_info info;
    if (p && dladdr(p, &info) && info.dli_fname)
        return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    return NULL;
}

int cmt_is_own_address(const void *addr)
{
    Dl_info self, other;
    if (!dladdr((const void *)&cmt_is_own_address, &self) || !dladdr(addr, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

static void *find_in_object_scope(const char *name, const void *caller)
{
    Dl_info info;
    struct link_map *lm = NULL;
    if (!caller || !dladdr1(caller, &info, (void **)&lm, RTLD_DL_LINKMAP) || !lm)
        return NULL;
    /* dlopen with RTLD_NOLOAD only returns a handle for an object already
     * loaded; dlsym on it searches that object and its dependencies, which
     * is where the caller's own reference would have been bound. */
    void *handle = dlopen(lm->l_name && lm->l_name[0] ? lm->l_name : NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (!handle)
        return NULL;
    void *p = cmt_real_dlsym(handle, name);
    cmt_real_dlclose(handle);
    return p && !cmt_is_own_address(p) ? p : NULL;
}

/* Libraries a program looked one of our exports up in by handle
 * (dlsym(handle, "cuGetProcAddress_v2"), as a runtime does with the driver
 * it opened). Such a library may be loaded RTLD_LOCAL, so that neither
 * RTLD_NEXT nor the caller's scope finds it, and, built without
 * -Bsymbolic, have its own references to its exports bound to the shim's
 * (issue 15: "no definition found after the shim"). Kept by path, reopened
 * with RTLD_NOLOAD at each use: a handle would dangle once the library is
 * unloaded. Slots are claimed with an atomic exchange and never freed, so
 * neither a fork nor a signal can find one half-written and taken. */
#define SCOPE_SLOTS 8
static struct {
    int state; /* 0 free, 1 being written, 2 ready (atomic) */
    char path[PATH_MAX];
} scopes[SCOPE_SLOTS];

void cmt_real_symbols_remember_scope(void *handle)
{
    struct link_map *lm = NULL;
    if (!handle || handle == RTLD_DEFAULT || handle == RTLD_NEXT || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 ||
        !lm || !lm->l_name || !lm->l_name[0] || strlen(lm->l_name) >= PATH_MAX)
        return;
    for (unsigned i = 0; i < SCOPE_SLOTS; i++) {
        int state = __atomic_load_n(&scopes[i].state, __ATOMIC_ACQUIRE);
        if (state == 2 && strcmp(scopes[i].path, lm->l_name) == 0)
            return;
        if (state == 0 && __atomic_exchange_n(&scopes[i].state, 1, __ATOMIC_ACQ_REL) == 0) {
            strcpy(scopes[i].path, lm->l_name);
            __atomic_store_n(&scopes[i].state, 2, __ATOMIC_RELEASE);
            return;
        }
    }
}

static void *find_in_remembered_scopes(const char *name)
{
    for (unsigned i = 0; i < SCOPE_SLOTS; i++) {
        if (__atomic_load_n(&scopes[i].state, __ATOMIC_ACQUIRE) != 2)
            continue;
        void *handle = dlopen(scopes[i].path, RTLD_LAZY | RTLD_NOLOAD);
        if (!handle)
            continue;
        /* dlsym on a handle searches that library and its dependencies,
         * never the preloaded shim: the library's own definition. */
        void *p = cmt_real_dlsym(handle, name);
        cmt_real_dlclose(handle);
        if (p && !cmt_is_own_address(p))
            return p;
    }
    return NULL;
}

/* One warning per name (names are the hooks' string literals): a hook
 * without its real function is called again and again. */
static void warn_once(const char *name)
{
    static const char *warned[64];
    for (unsigned i = 0; i < sizeof warned / sizeof warned[0]; i++) {
        const char *w = __atomic_load_n(&warned[i], __ATOMIC_ACQUIRE);
        if (w == name)
            return;
        if (!w) {
            const char *expected = NULL;
            if (__atomic_compare_exchange_n(&warned[i], &expected, name, false, __ATOMIC_ACQ_REL,
                                            __ATOMIC_ACQUIRE))
                break;
            if (expected == name)
                return;
        }
    }
    cmt_log_warning("%s: no definition found after the shim; the call returns the library's "
                    "\"not initialized\" error: check that the CUDA library is loaded, and that no other "
                    "preload hides it",
                    name);
}

/* A resolution runs glibc's dlsym, whose per-thread error state is not
 * async-signal-safe: a signal handler calling a hook whose real function its
 * own thread is resolving (the hook's first call) would run dlsym inside
 * dlsym, and glibc frees that state twice (found by the signal handler test
 * under ASan). Signals wait for the microseconds of a resolution, which
 * happens once per name. */
static void block_signals(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
}

static void *find_real_unblocked(const char *name, const void *caller)
{
    void *p = cmt_real_dlsym(RTLD_NEXT, name);
    if (p && !cmt_is_own_address(p))
        return p;
    p = find_in_object_scope(name, caller);
    if (!p)
        p = find_in_remembered_scopes(name);
    if (!p)
        warn_once(name);
    return p;
}

void *cmt_find_real(const char *name, const void *caller)
{
    sigset_t old;
    block_signals(&old);
    void *p = find_real_unblocked(name, caller);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return p;
}

void *cmt_find_sibling(const char *name, const void *sibling)
{
    sigset_t old;
    block_signals(&old);
    void *p = find_in_object_scope(name, sibling);
    if (!p)
        p = find_real_unblocked(name, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return p;
}
