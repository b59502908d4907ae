/* SPDX-License-Identifier: MIT */
/* Failed allocations examined: what this process held, its address span, the
 * device sample taken at the failure (free, total, pools), and what the
 * failing thread did next (released memory and asked again: a caching
 * allocator making room). The verdict itself is oom_verdict.c's. */
#include <stdlib.h>
#include <string.h>

#include "forensics.h"

static struct cmt_oom_watch *watch_of(struct cmt_forensics *f, uint32_t tid)
{
    for (size_t i = 0; i < f->n_watches; i++)
        if (f->watches[i].tid == tid)
            return &f->watches[i];
    return NULL;
}

static void drop_watch(struct cmt_forensics *f, struct cmt_oom_watch *w)
{
    size_t i = (size_t)(w - f->watches);
    memmove(f->watches + i, f->watches + i + 1, (f->n_watches - i - 1) * sizeof *w);
    f->n_watches--;
}

/* The thread's next allocation after a failure: a retry when it asks for
 * the same size. */
static void next_allocation(struct cmt_forensics *f, uint32_t tid, uint64_t size, int32_t result, uint64_t ts)
{
    struct cmt_oom_watch *w = watch_of(f, tid);
    if (!w)
        return;
    if (w->watching) {
        struct cmt_oom_case *c = &f->cases[w->case_index];
        c->retried = size == c->size;
        c->retry_result = result;
        c->next_ts = ts;
    }
    drop_watch(f, w);
}

static void keep_top_site(void *ctx, uint32_t s, const struct cmt_site_cell *cell)
{
    struct cmt_oom_case *c = ctx;
    if (!cell->count)
        return;
    size_t at = c->n_top;
    /* Cells come in no useful order: ties go to the lower stack id, so the
     * listing does not depend on the tables' random seeds. */
    while (at > 0 && (c->top[at - 1].bytes < cell->bytes ||
                      (c->top[at - 1].bytes == cell->bytes && c->top[at - 1].stack > s)))
        at--;
    if (at >= CMT_OOM_TOP_SITES)
        return;
    size_t last = c->n_top < CMT_OOM_TOP_SITES ? c->n_top : CMT_OOM_TOP_SITES - 1;
    memmove(c->top + at + 1, c->top + at, (last - at) * sizeof *c->top);
    c->top[at] = (struct cmt_oom_site){s, cell->bytes, cell->count};
    if (c->n_top < CMT_OOM_TOP_SITES)
        c->n_top++;
}

static void top_sites(struct cmt_oom_case *c, const struct cmt_replay *r, const struct cmt_account *a)
{
    c->n_top = 0;
    if (a)
        cmt_replay_account_cells(r, a, keep_top_site, c);
}

int cmt_oom_on_failure(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    f->failures_seen++;
    next_allocation(f, e->tid, e->size, e->result, e->ts);
    if (f->n_cases == CMT_OOM_CASES_MAX)
        return 0;
    struct cmt_oom_case *c = &f->cases[f->n_cases];
    *c = (struct cmt_oom_case){
        .failure_index = r->n_failures < CMT_MAX_FAILURES_KEPT ? r->n_failures : SIZE_MAX,
        .api = e->api,
        .kind = e->kind,
        .result = e->result,
        .device = e->device,
        .tid = e->tid,
        .stack = e->stack,
        .size = e->size,
        .ts = e->ts,
        .pool = e->api == CMT_API_CUDA_MALLOC_FROM_POOL_ASYNC || e->api == CMT_API_CU_MEM_ALLOC_FROM_POOL_ASYNC
                    ? e->aux0
                    : 0,
    };
    const struct cmt_account *a = cmt_replay_account(r, e->device, e->device < 0 ? CMT_CLASS_HOST : CMT_CLASS_DEVICE);
    if (a) {
        c->live = a->live;
        for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
            c->live_by_kind[k] = a->live_by_kind[k];
    }
    top_sites(c, r, a);
    if (e->device >= 0) {
        struct cmt_frag_point p;
        if (cmt_frag_checkpoint(f, r, e->device, e->ts, &p) != 0)
            return -1;
        c->span = p.holes;
    }
    f->n_cases++;
    if (f->n_watches == CMT_OOM_CASES_MAX)
        drop_watch(f, &f->watches[0]);
    f->watches[f->n_watches++] = (struct cmt_oom_watch){
        .tid = e->tid,
        .case_index = (size_t)(c - f->cases),
        .want_sample = true,
        .watching = true,
    };
    return 0;
}

int cmt_oom_on_change(struct cmt_forensics *f, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    const struct cmt_replay_in *e = r->event;
    if (!e || f->n_watches == 0)
        return 0;
    if (e->type == CMT_REC_ALLOC && live) {
        next_allocation(f, e->tid, e->size, 0, e->ts);
        return 0;
    }
    struct cmt_oom_watch *w = watch_of(f, e->tid);
    if (!w)
        return 0;
    w->taking_pools = false;
    if (!live && e->type == CMT_REC_FREE && w->watching && cmt_kind_holds_memory(l->kind)) {
        struct cmt_oom_case *c = &f->cases[w->case_index];
        c->released_after += l->size;
        c->releases_after++;
    }
    return 0;
}

void cmt_oom_on_record(struct cmt_forensics *f, const struct cmt_replay_record *e)
{
    struct cmt_oom_watch *w = f->n_watches ? watch_of(f, e->tid) : NULL;
    if (e->type == CMT_REC_SAMPLE && e->api == CMT_API_SAMPLE_FAILURE) {
        if (!w || !w->want_sample) {
            f->failure_samples_unmatched++;
            return;
        }
        struct cmt_oom_case *c = &f->cases[w->case_index];
        c->has_sample = true;
        c->sample_ts = e->ts;
        c->free = e->aux[0];
        c->total = e->aux[1];
        c->pool_reserved = e->aux[2];
        c->pool_used = e->aux[3];
        w->want_sample = false;
        w->taking_pools = true;
        return;
    }
    if (!w)
        return;
    struct cmt_oom_case *c = &f->cases[w->case_index];
    if (e->type == CMT_REC_POOL && e->api == CMT_API_POOL_STATE && w->taking_pools) {
        if (c->n_pools < CMT_OOM_POOLS_MAX)
            c->pools[c->n_pools++] = (struct cmt_oom_pool){e->addr, e->aux[0], e->aux[1], e->aux[2], e->aux[3]};
        return;
    }
    w->taking_pools = false;
    w->want_sample = false;
    if (!w->watching || e->type != CMT_REC_POOL || e->result != 0)
        return;
    if (e->api == CMT_API_POOL_TRIM || e->api == CMT_API_CU_MEM_POOL_TRIM) {
        c->trims_after++;
        w->trimmed_pool = e->addr;
    } else if (e->api == CMT_API_POOL_STATE && w->trimmed_pool == e->addr) {
        /* What the trim gave back: the pool's reserved bytes at the failure
         * against now. */
        for (size_t i = 0; i < c->n_pools; i++)
            if (c->pools[i].handle == e->addr && c->pools[i].reserved > e->aux[0])
                c->trimmed_bytes += c->pools[i].reserved - e->aux[0];
        w->trimmed_pool = 0;
    }
}

void cmt_oom_figures_of(const struct cmt_forensics *f, const struct cmt_oom_case *c, uint64_t allowance,
                        struct cmt_oom_figures *out)
{
    (void)f;
    uint64_t slack = 0, own = 0;
    bool from_pool = c->kind == CMT_KIND_ASYNC;
    for (size_t i = 0; i < c->n_pools; i++) {
        const struct cmt_oom_pool *p = &c->pools[i];
        uint64_t s = p->reserved > p->used ? p->reserved - p->used : 0;
        slack += s;
        /* A stream-ordered request's own pool had no range large enough in
         * its free space, or it would have served the request from it. */
        if (from_pool && (c->pool ? p->handle == c->pool : (p->flags & 2) != 0))
            own += s;
    }
    *out = (struct cmt_oom_figures){
        .result = c->result,
        .request = c->size,
        .live = c->live,
        .allowance = allowance,
        .has_sample = c->has_sample,
        .free = c->free,
        .total = c->total,
        .pool_slack = slack,
        .pool_slack_other = slack - own,
        .span_free = c->span.total,
        .largest_hole = c->span.largest,
        .released_after = c->released_after,
        .retried = c->retried,
    };
}
