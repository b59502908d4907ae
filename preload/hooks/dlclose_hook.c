/* SPDX-License-Identifier: MIT */
/* dlclose, passed through. Unloading a library is the one event after which
 * an address may hold other code than before: other unwind rules, another
 * function. So every stack the shim cached or interned is forgotten once the
 * real dlclose returned (stack_cache.c relies on it for exactness), and
 * libunwind forgets what it cached about the unloaded code. Libraries that
 * glibc loads and unloads for itself (iconv's gconv modules) go through its
 * internal __libc_dlclose, not this symbol; they never make CUDA calls, so
 * no allocation stack runs through them. */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <stddef.h>

#include "real_symbols.h"
#include "recorder.h"
#include "stack_cache.h"
#include "stacks.h"

typedef int (*dlclose_fn)(void *);

static dlclose_fn real_dlclose(void)
{
    static dlclose_fn real;
    dlclose_fn fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        /* As for dlsym (real_symbols.c): glibc >= 2.34 has it in libc, older
         * ones in libdl under the architecture's base version. */
        static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
        for (size_t i = 0; !fn && i < sizeof versions / sizeof versions[0]; i++)
            fn = (dlclose_fn)dlvsym(RTLD_NEXT, "dlclose", versions[i]);
        if (!fn)
            return NULL;
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn;
}

int cmt_real_dlclose(void *handle)
{
    dlclose_fn fn = real_dlclose();
    return fn ? fn(handle) : -1; /* not glibc: nothing was unloaded */
}

CMT_EXPORT int dlclose(void *handle)
{
    int r = cmt_real_dlclose(handle);
    cmt_stacks_forget_code();
    unw_flush_cache(unw_local_addr_space, 0, 0);
    return r;
}
