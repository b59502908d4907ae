/* SPDX-License-Identifier: MIT */
#include "device_cache.h"

#include <dlfcn.h>

#include "real_symbols.h"

uint32_t cmt_device_epoch = 1;

void cmt_device_cache_forget_all(void)
{
    uint32_t next = __atomic_add_fetch(&cmt_device_epoch, 1, __ATOMIC_ACQ_REL);
    if (next == 0) /* after 2^32 contexts destroyed: 0 means "empty" */
        __atomic_compare_exchange_n(&cmt_device_epoch, &next, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED);
}

static struct {
    uint64_t checked, wrong_device, unseen_switch;
} stats;

typedef int (*get_current_fn)(void **);

/* The driver's cuCtxGetCurrent, for check mode: libcuda is loaded by then
 * (an allocation went through it), possibly with RTLD_LOCAL, hence the
 * RTLD_NOLOAD handle rather than RTLD_DEFAULT. */
static void *current_context(void)
{
    static get_current_fn fn;
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        get_current_fn f = h ? (get_current_fn)cmt_real_dlsym(h, "cuCtxGetCurrent") : NULL;
        if (h)
            cmt_real_dlclose(h);
        __atomic_store_n(&fn, f, __ATOMIC_RELEASE);
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    get_current_fn f = __atomic_load_n(&fn, __ATOMIC_ACQUIRE);
    void *ctx = NULL;
    if (f && f(&ctx) != 0)
        ctx = NULL;
    return ctx;
}

void cmt_device_cache_check(struct cmt_device_memo *m, int32_t device, uint32_t epoch)
{
    void *ctx = current_context();
    if (m->epoch == epoch && epoch != 0) {
        __atomic_fetch_add(&stats.checked, 1, __ATOMIC_RELAXED);
        if (m->device != device)
            __atomic_fetch_add(&stats.wrong_device, 1, __ATOMIC_RELAXED);
        if (m->context != ctx)
            __atomic_fetch_add(&stats.unseen_switch, 1, __ATOMIC_RELAXED);
    }
    m->context = ctx;
}

void cmt_device_cache_stats(struct cmt_device_cache_stats *out)
{
    out->checked = __atomic_load_n(&stats.checked, __ATOMIC_RELAXED);
    out->wrong_device = __atomic_load_n(&stats.wrong_device, __ATOMIC_RELAXED);
    out->unseen_switch = __atomic_load_n(&stats.unseen_switch, __ATOMIC_RELAXED);
}
