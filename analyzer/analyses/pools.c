/* SPDX-License-Identifier: MIT */
/* Stream-ordered pools as the trace describes them: created, destroyed and
 * trimmed by the program (POOL records), reserved and used bytes over time
 * from the samples' pool:state records. */
#include <stdlib.h>
#include <string.h>

#include "forensics.h"

const struct cmt_pool_info *cmt_pools_find(const struct cmt_forensics *f, uint64_t handle)
{
    /* The newest pool with this handle: a handle may be reused after a destroy. */
    for (size_t i = f->n_pools; i-- > 0;)
        if (f->pools[i].handle == handle)
            return &f->pools[i];
    return NULL;
}

static struct cmt_pool_info *pool_new(struct cmt_forensics *f, uint64_t handle, int32_t device)
{
    if (f->n_pools == CMT_POOLS_MAX) {
        f->pool_records_dropped++;
        return NULL;
    }
    if (f->n_pools == f->pools_cap) {
        size_t cap = f->pools_cap ? f->pools_cap * 2 : 8;
        struct cmt_pool_info *p = realloc(f->pools, cap * sizeof *p);
        if (!p)
            return NULL;
        f->pools = p;
        f->pools_cap = cap;
    }
    struct cmt_pool_info *p = &f->pools[f->n_pools++];
    memset(p, 0, sizeof *p);
    p->handle = handle;
    p->device = device;
    p->pool_series.cap = CMT_POOL_SERIES_MAX;
    return p;
}

/* The live pool with this handle, created on first sight. */
static struct cmt_pool_info *pool_of(struct cmt_forensics *f, uint64_t handle, int32_t device)
{
    struct cmt_pool_info *p = (struct cmt_pool_info *)cmt_pools_find(f, handle);
    if (p && !p->destroyed)
        return p;
    return pool_new(f, handle, device);
}

static void pool_state(struct cmt_pool_info *p, const struct cmt_replay_record *e)
{
    p->states++;
    p->reserved = e->aux[0];
    p->used = e->aux[1];
    p->threshold = e->aux[2];
    if (e->aux[3] & 1)
        p->is_default = true;
    p->is_current = (e->aux[3] & 2) != 0;
    if (p->reserved > p->peak_reserved) {
        p->peak_reserved = p->reserved;
        p->peak_reserved_ts = e->ts;
    }
    uint64_t slack = p->reserved > p->used ? p->reserved - p->used : 0;
    if (slack > p->peak_slack) {
        p->peak_slack = slack;
        p->peak_slack_ts = e->ts;
    }
    struct cmt_pool_point *slot = cmt_series_next(&p->pool_series, p->series, sizeof *p->series);
    if (slot)
        *slot = (struct cmt_pool_point){e->ts, p->reserved, p->used};
}

int cmt_pools_on_record(struct cmt_forensics *f, const struct cmt_replay_record *e)
{
    if (e->result != 0 || !e->addr)
        return 0; /* a failed pool call changed nothing */
    struct cmt_pool_info *p;
    switch (e->api) {
    case CMT_API_POOL_CREATE:
    case CMT_API_CU_MEM_POOL_CREATE:
        p = pool_new(f, e->addr, e->device);
        if (!p)
            return f->n_pools == CMT_POOLS_MAX ? 0 : -1;
        p->created_in_trace = true;
        p->create_api = e->api;
        p->create_ts = e->ts;
        p->create_stack = e->stack;
        p->max_size = e->aux[0];
        return 0;
    case CMT_API_POOL_DESTROY:
    case CMT_API_CU_MEM_POOL_DESTROY:
        p = pool_of(f, e->addr, e->device);
        if (!p)
            return f->n_pools == CMT_POOLS_MAX ? 0 : -1;
        p->destroyed = true;
        p->destroy_ts = e->ts;
        return 0;
    case CMT_API_POOL_TRIM:
    case CMT_API_CU_MEM_POOL_TRIM:
        p = pool_of(f, e->addr, e->device);
        if (!p)
            return f->n_pools == CMT_POOLS_MAX ? 0 : -1;
        p->trims++;
        p->last_trim_stack = e->stack;
        return 0;
    case CMT_API_POOL_STATE:
        p = pool_of(f, e->addr, e->device);
        if (!p)
            return f->n_pools == CMT_POOLS_MAX ? 0 : -1;
        pool_state(p, e);
        return 0;
    default:
        return 0;
    }
}
