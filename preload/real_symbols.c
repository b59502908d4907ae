/* SPDX-License-Identifier: MIT */
#include "real_symbols.h"

#include <dlfcn.h>
#include <link.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

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
        cmt_log_warning("%s: no definition found after the shim; the call fails", name);
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
