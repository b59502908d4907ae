/* SPDX-License-Identifier: MIT */
/* Which runtime hook dlsym hands out (runtime_exports.h). */
#include "runtime_exports.h"

#include <stdbool.h>

#include "config.h"
#include "driver_table.h"

extern const struct cmt_runtime_export __start_cmt_runtime_exports[] __attribute__((visibility("hidden")));
extern const struct cmt_runtime_export __stop_cmt_runtime_exports[] __attribute__((visibility("hidden")));

/* As driver_lookup.c's: no C library string function on the dlsym path. */
CMT_EARLY static bool same_name(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

CMT_EARLY const struct cmt_runtime_export *cmt_runtime_hooks_find_export(const char *name)
{
    /* Every runtime name starts so; most of a program's dlsym calls do not. */
    if (name[0] != 'c' || name[1] != 'u' || name[2] != 'd' || name[3] != 'a')
        return NULL;
    for (const struct cmt_runtime_export *e = __start_cmt_runtime_exports; e < __stop_cmt_runtime_exports; e++)
        if (same_name(e->name, name))
            return e;
    return NULL;
}

void *cmt_runtime_hooks_substitute_dlsym(void *handle, const char *name, void *p)
{
    (void)handle;
    if (!p || cmt_config.disabled || cmt_driver_hooks_is_ours(p))
        return p;
    const struct cmt_runtime_export *e = cmt_runtime_hooks_find_export(name);
    if (!e)
        return p;
    /* What the hook calls: found already by an earlier call, or now, as the
     * hook's first call would find it (the next definition after the shim,
     * else one in the scope of the object p lies in). The hook is handed out
     * only in place of that very function, so the program runs the same
     * code either way. */
    void *real = cmt_real_get(e->real, e->name, p);
    return real == p ? e->hook : p;
}
