/* SPDX-License-Identifier: MIT */
#include "alloc_views.h"

#include <string.h>

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct cmt_alloc_views *v = ctx;
    int rc = live ? cmt_alloc_views_change(v, r, l, true) : cmt_alloc_views_change(v, r, l, false);
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
