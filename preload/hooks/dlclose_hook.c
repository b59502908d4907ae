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
#include "stacks.h"

CMT_EXPORT int dlclose(void *handle)
{
    int r = cmt_real_dlclose(handle);
    cmt_stacks_forget_code();
    unw_flush_cache(unw_local_addr_space, 0, 0);
    return r;
}
