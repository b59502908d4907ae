/* SPDX-License-Identifier: MIT */
/* The table of driver hooks (driver_table.h) and the lookup that hands them
 * out: which of our hooks, if any, stands in for a pointer that
 * cuGetProcAddress or dlsym found, and cuGetProcAddress itself, whose hooks
 * are part of that lookup (the table's first two rows). Never on an
 * allocation's hot path: this runs when a program looks its entry points up.
 *
 * Compiled with __CUDA_API_VERSION_INTERNAL: cuda.h then declares the v1 ABI
 * as cuGetProcAddress and the v2 ABI as cuGetProcAddress_v2, the two names
 * libcuda exports. */
#define __CUDA_API_VERSION_INTERNAL 1
#include "driver_table.h"

#include <dlfcn.h>
#include <sched.h>

#include "config.h"
#include "modules.h"
#include "real_symbols.h"

_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress), PFN_cuGetProcAddress_v11030),
               "cuGetProcAddress is not the v1 ABI");
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress_v2), PFN_cuGetProcAddress_v12000),
               "cuGetProcAddress_v2 is not the v2 ABI");

/* Set while this thread asks the driver for reference pointers: should the
 * driver (or an interposer between us and it) call back into one of our
 * cuGetProcAddress copies, that call returns the driver's pointers as they
 * are instead of waiting for the resolution it is part of. */
static __thread bool resolving __attribute__((tls_model("initial-exec")));

bool cmt_driver_hooks_is_ours(const void *addr)
{
    static uint64_t lo, hi;
    static int known;
    if (!__atomic_load_n(&known, __ATOMIC_ACQUIRE)) {
        uint64_t l, h;
        cmt_modules_self_range(&l, &h);
        __atomic_store_n(&lo, l, __ATOMIC_RELAXED);
        __atomic_store_n(&hi, h, __ATOMIC_RELAXED);
        __atomic_store_n(&known, 1, __ATOMIC_RELEASE);
    }
    uint64_t a = (uint64_t)(uintptr_t)addr;
    return a >= __atomic_load_n(&lo, __ATOMIC_RELAXED) && a < __atomic_load_n(&hi, __ATOMIC_RELAXED);
}

/* Asks the driver, once per entry, which function it serves for the ABI our
 * hooks have: cuGetProcAddress(symbol, abi_version, stream_flags). The
 * version is the one that introduced that ABI, so a driver older than the
 * headers the shim was built with answers as well as a newer one. */
static void resolve_proc(size_t i, const struct cmt_proc_resolver *resolver)
{
    const struct cmt_driver_hook *e = &cmt_driver_hooks[i];
    struct cmt_driver_hook_reals *reals = &cmt_driver_hook_reals[i];
    int state = __atomic_load_n(&reals->proc_state, __ATOMIC_ACQUIRE);
    if (state == CMT_RESOLVE_DONE || (!resolver->v1 && !resolver->v2))
        return;
    int expected = CMT_RESOLVE_NOT_YET;
    if (__atomic_compare_exchange_n(&reals->proc_state, &expected, CMT_RESOLVE_RUNNING, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE)) {
        void *p = NULL;
        resolving = true;
        CUresult r = resolver->v2 ? resolver->v2(e->symbol, &p, e->abi_version, e->stream_flags, NULL)
                                  : resolver->v1(e->symbol, &p, e->abi_version, e->stream_flags);
        resolving = false;
        __atomic_store_n(&reals->proc, r == CUDA_SUCCESS ? p : NULL, __ATOMIC_RELEASE);
        if (r == CUDA_SUCCESS)
            cmt_real_symbols_note_driver(p);
        __atomic_store_n(&reals->proc_state, CMT_RESOLVE_DONE, __ATOMIC_RELEASE);
        return;
    }
    /* Another thread is asking the driver: a handful of instructions away. */
    while (__atomic_load_n(&reals->proc_state, __ATOMIC_ACQUIRE) != CMT_RESOLVE_DONE)
        sched_yield();
}

void cmt_driver_hooks_fork_child(void)
{
    /* A thread of the parent may have been asking the driver when it forked;
     * that thread does not exist here, and whoever waited for it would wait
     * forever (seen: a child's first cudaMalloc spinning in resolve_proc).
     * Ask again. */
    for (size_t i = 0; i < CMT_HOOK_COUNT; i++) {
        int running = CMT_RESOLVE_RUNNING;
        __atomic_compare_exchange_n(&cmt_driver_hook_reals[i].proc_state, &running, CMT_RESOLVE_NOT_YET, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    resolving = false;
}

/* strncmp(name, prefix, strlen(prefix)) == 0, written out: on the dlsym
 * path (CMT_EARLY) the C library's string functions may not be callable yet
 * (a sanitizer's interceptors of them are still being set up). */
CMT_EARLY static bool starts_with(const char *name, const char *prefix)
{
    while (*prefix)
        if (*name++ != *prefix++)
            return false;
    return true;
}

CMT_EARLY static bool same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* Names we hook (base and exported) all start like this; most of the ~440
 * look-ups a runtime makes, and of a program's dlsym calls, do not. */
CMT_EARLY static bool may_be_ours(const char *name)
{
    return starts_with(name, "cuMem") || starts_with(name, "cuArray") || starts_with(name, "cuGetProcAddress") ||
           starts_with(name, "cuIpc") ||
           starts_with(name, "cuCtx") || starts_with(name, "cuDevicePrimaryCtx");
}

void *cmt_driver_hooks_substitute_proc(const char *symbol, void *pfn, const struct cmt_proc_resolver *resolver)
{
    if (!symbol || !pfn || resolving || cmt_config.disabled || !may_be_ours(symbol) || cmt_driver_hooks_is_ours(pfn))
        return pfn;
    for (size_t i = 0; i < CMT_HOOK_COUNT; i++) {
        if (!same_name(cmt_driver_hooks[i].symbol, symbol))
            continue;
        resolve_proc(i, resolver);
        if (__atomic_load_n(&cmt_driver_hook_reals[i].proc, __ATOMIC_ACQUIRE) == pfn)
            return cmt_driver_hooks[i].proc_hook;
    }
    return pfn;
}

CMT_EARLY const struct cmt_driver_hook *cmt_driver_hooks_find_export(const char *name)
{
    if (!may_be_ours(name))
        return NULL;
    for (size_t i = 0; i < CMT_HOOK_COUNT; i++)
        if (same_name(cmt_driver_hooks[i].export_name, name))
            return &cmt_driver_hooks[i];
    return NULL;
}

/* What the named export forwards to, if it is the next definition after the
 * shim in the global scope; found quietly (no warning when there is none). */
static void *named_real(size_t i)
{
    void **slot = &cmt_driver_hook_reals[i].named;
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    p = cmt_real_dlsym(RTLD_NEXT, cmt_driver_hooks[i].export_name);
    if (!p || cmt_driver_hooks_is_ours(p))
        return NULL;
    void *expected = NULL;
    if (!__atomic_compare_exchange_n(slot, &expected, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return expected;
    cmt_real_symbols_note_driver(p);
    return p;
}

/* A real cuGetProcAddress of the driver that dlsym found p in. */
static struct cmt_proc_resolver resolver_for(size_t i, void *handle, void *p)
{
    struct cmt_proc_resolver r = {0};
    if (i == CMT_HOOK_cuGetProcAddress_v2) {
        r.v2 = (PFN_cuGetProcAddress_v12000)p;
    } else if (i == CMT_HOOK_cuGetProcAddress) {
        r.v1 = (PFN_cuGetProcAddress_v11030)p;
    } else {
        r.v2 = (PFN_cuGetProcAddress_v12000)cmt_real_dlsym(handle, "cuGetProcAddress_v2");
        if (!r.v2)
            r.v1 = (PFN_cuGetProcAddress_v11030)cmt_real_dlsym(handle, "cuGetProcAddress");
    }
    return r;
}

void *cmt_driver_hooks_substitute_dlsym(void *handle, const char *name, void *p)
{
    if (!p || cmt_config.disabled || cmt_driver_hooks_is_ours(p))
        return p;
    const struct cmt_driver_hook *e = cmt_driver_hooks_find_export(name);
    if (!e)
        return p;
    size_t i = (size_t)(e - cmt_driver_hooks);
    struct cmt_driver_hook_reals *reals = &cmt_driver_hook_reals[i];
    if (named_real(i) == p)
        return e->named_hook;
    if (__atomic_load_n(&reals->proc_state, __ATOMIC_ACQUIRE) != CMT_RESOLVE_DONE) {
        struct cmt_proc_resolver resolver = resolver_for(i, handle, p);
        resolve_proc(i, &resolver);
    }
    if (__atomic_load_n(&reals->proc, __ATOMIC_ACQUIRE) == p)
        return e->proc_hook;
    /* cuGetProcAddress itself: the driver may serve "cuGetProcAddress" at
     * 12000 through another function than the one it exports, so what dlsym
     * found gets a copy of its own. */
    if (e->dlsym_hook) {
        void *expected = NULL;
        __atomic_compare_exchange_n(&reals->dlsym, &expected, p, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&reals->dlsym, __ATOMIC_ACQUIRE) == p)
            return e->dlsym_hook;
    }
    return p;
}

/* --- cuGetProcAddress ----------------------------------------------------- */

/* The shim's cuGetProcAddress, both ABIs (v1 without the status argument,
 * v2 with it), each in three copies that differ in what they forward to:
 *   named  the exports cuGetProcAddress and cuGetProcAddress_v2, forwarding
 *          to the next definition after the shim (programs linked with -lcuda);
 *   proc   handed out when cuGetProcAddress is asked for "cuGetProcAddress",
 *          forwarding to what the driver returned;
 *   dlsym  handed out by dlsym(handle, "cuGetProcAddress_v2"), forwarding to
 *          what dlsym found when no other copy forwards to it.
 * Each returns exactly what the real function returned, with *pfn replaced
 * by our hook where one of ours forwards to exactly that pointer. */

static CUresult get_proc_address_v1(PFN_cuGetProcAddress_v11030 real, const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, cudaVersion, flags);
    if (r == CUDA_SUCCESS && pfn && *pfn) {
        struct cmt_proc_resolver resolver = {.v1 = real};
        *pfn = cmt_driver_hooks_substitute_proc(symbol, *pfn, &resolver);
    }
    return r;
}

static CUresult get_proc_address_v2(PFN_cuGetProcAddress_v12000 real, const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *symbolStatus)
{
    if (!real)
        return CUDA_ERROR_NOT_INITIALIZED;
    CUresult r = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (r == CUDA_SUCCESS && pfn && *pfn) {
        struct cmt_proc_resolver resolver = {.v2 = real};
        *pfn = cmt_driver_hooks_substitute_proc(symbol, *pfn, &resolver);
    }
    return r;
}

CMT_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc_address_v1(CMT_NAMED_REAL(cuGetProcAddress), symbol, pfn, cudaVersion, flags);
}

CMT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc_address_v2(CMT_NAMED_REAL(cuGetProcAddress_v2), symbol, pfn, cudaVersion, flags, symbolStatus);
}

CMT_SELF_ALIAS(cuGetProcAddress)
CMT_SELF_ALIAS(cuGetProcAddress_v2)

static CUresult get_proc_address_v1_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc_address_v1((PFN_cuGetProcAddress_v11030)cmt_driver_hook_proc_real(CMT_HOOK_cuGetProcAddress),
                               symbol, pfn, cudaVersion, flags);
}

static CUresult get_proc_address_v1_dlsym(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc_address_v1((PFN_cuGetProcAddress_v11030)cmt_driver_hook_dlsym_real(CMT_HOOK_cuGetProcAddress),
                               symbol, pfn, cudaVersion, flags);
}

static CUresult get_proc_address_v2_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                         CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc_address_v2((PFN_cuGetProcAddress_v12000)cmt_driver_hook_proc_real(CMT_HOOK_cuGetProcAddress_v2),
                               symbol, pfn, cudaVersion, flags, symbolStatus);
}

static CUresult get_proc_address_v2_dlsym(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc_address_v2((PFN_cuGetProcAddress_v12000)cmt_driver_hook_dlsym_real(CMT_HOOK_cuGetProcAddress_v2),
                               symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* --- the table ------------------------------------------------------------ */

#define CMT_HOOK_ROW(name, base, version, suffix, flags, impl, params, ...) \
    [CMT_HOOK_##name] = {                                                    \
        .symbol = #base,                                                     \
        .abi_version = version,                                              \
        .stream_flags = flags,                                               \
        .export_name = #name,                                                \
        .named_hook = (void *)&cmt_self_##name,                              \
        .proc_hook = (void *)&cmt_proc_##name,                               \
    },

const struct cmt_driver_hook cmt_driver_hooks[CMT_HOOK_COUNT] = {
    /* The lookup function itself: the runtime asks cuGetProcAddress_v2 for
     * "cuGetProcAddress" at 11030 (v1 ABI) and 12000 (v2 ABI) and fetches
     * everything else through what it gets back. */
    [CMT_HOOK_cuGetProcAddress] = {
        .symbol = "cuGetProcAddress",
        .abi_version = 11030,
        .stream_flags = CMT_LEGACY_STREAM,
        .export_name = "cuGetProcAddress",
        .named_hook = (void *)&cmt_self_cuGetProcAddress,
        .proc_hook = (void *)&get_proc_address_v1_proc,
        .dlsym_hook = (void *)&get_proc_address_v1_dlsym,
    },
    [CMT_HOOK_cuGetProcAddress_v2] = {
        .symbol = "cuGetProcAddress",
        .abi_version = 12000,
        .stream_flags = CMT_LEGACY_STREAM,
        .export_name = "cuGetProcAddress_v2",
        .named_hook = (void *)&cmt_self_cuGetProcAddress_v2,
        .proc_hook = (void *)&get_proc_address_v2_proc,
        .dlsym_hook = (void *)&get_proc_address_v2_dlsym,
    },
    CMT_DRIVER_HOOKS(CMT_HOOK_ROW)
};
