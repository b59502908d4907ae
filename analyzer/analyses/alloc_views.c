/* SPDX-License-Identifier: MIT */
#include "alloc_views.h"

#include <string.h>

/* Each view's own tests, made once: memory (site_calls), device-resident
 * memory (thread_use, holders); during an event (site_calls, thread_use). */
static inline __attribute__((always_inline)) int views_change(struct cmt_alloc_views *v, const struct cmt_replay *r,
                                                              const struct cmt_live *l, bool live)
{
    if (!cmt_kind_holds_memory(l->kind))
        return 0;
    /* the replay's devices are -1 .. CMT_MAX_DEVICES - 1 */
    bool device = (uint32_t)l->device < CMT_MAX_DEVICES && cmt_class_of_kind(l->kind) == CMT_CLASS_DEVICE;
    if (device && v->holders)
        cmt_holder_pass_device_change(v->holders, r, l, live);
    if (!r->event)
        return 0;
    if (v->site_calls && cmt_site_calls_memory_change(v->site_calls, r, l, live) != 0)
        return -1;
    if (device && v->thread_use && cmt_thread_use_device_change(v->thread_use, r, l, live) != 0)
        return -1;
    return 0;
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct cmt_alloc_views *v = ctx;
    int rc = live ? views_change(v, r, l, true) : views_change(v, r, l, false);
    if (rc != 0 || !v->then)
        return rc;
    return v->then(v->then_ctx, r, l, live);
}

void cmt_alloc_views_then(struct cmt_alloc_views *v, struct cmt_replay *r, const struct cmt_replay_observer *o)
{
    if (!o->on_change)
        return;
    v->then = o->on_change;
    v->then_ctx = o->ctx;
    cmt_replay_hand_over_changes(r, o);
}

void cmt_alloc_views_init(struct cmt_alloc_views *v, struct cmt_site_calls *site_calls,
                          struct cmt_thread_use *thread_use, struct cmt_holder_pass *holders)
{
    memset(v, 0, sizeof *v);
    v->site_calls = site_calls;
    v->thread_use = thread_use;
    v->holders = holders;
    v->observer = (struct cmt_replay_observer){.ctx = v, .on_change = on_change};
}
