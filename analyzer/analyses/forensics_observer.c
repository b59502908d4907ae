/* SPDX-License-Identifier: MIT */
/* The forensics observer: dispatches replay events to the fragmentation
 * tracker (frag.c), the failure examiner (oom.c) and the pool and sample
 * records (pools.c). */
#include "forensics.h"

#include <stdlib.h>
#include <string.h>

static int on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    int rc = cmt_oom_on_failure(ctx, r, e);
    cmt_frag_clock_set(ctx); /* a failure is watched now */
    return rc;
}

static int on_record(void *ctx, const struct cmt_replay *r, const struct cmt_replay_record *e)
{
    struct cmt_forensics *f = ctx;
    cmt_oom_on_record(f, e);
    if (e->type == CMT_REC_SAMPLE) {
        struct cmt_device_forensics *d = cmt_forensics_device(f, e->device);
        if (!d)
            return e->device >= 0 && e->device < CMT_MAX_DEVICES ? -1 : 0;
        const struct cmt_account *a = cmt_replay_account(r, e->device, CMT_CLASS_DEVICE);
        struct cmt_sample_point s = {
            .ts = e->ts,
            .api = e->api,
            .free = e->aux[0],
            .total = e->aux[1],
            .pool_reserved = e->aux[2],
            .pool_used = e->aux[3],
            .live = a ? a->live : 0,
        };
        f->samples++;
        if (s.total)
            d->device_bytes = s.total;
        if (d->n_samples++ == 0)
            d->first_sample = s;
        d->last_sample = s;
        if (d->n_samples == 1 || cmt_sample_gap(&s) > cmt_sample_gap(&d->max_gap_sample))
            d->max_gap_sample = s;
        struct cmt_sample_point *slot = cmt_series_next(&d->sample_series, d->samples, sizeof *d->samples);
        if (slot)
            *slot = s;
        return 0;
    }
    if (e->type == CMT_REC_POOL)
        return cmt_pools_on_record(f, e);
    return 0;
}

static int on_finish(void *ctx, const struct cmt_replay *r, uint64_t end_ts)
{
    (void)end_ts; /* the replay's own end */
    return cmt_forensics_finish(ctx, r);
}

struct cmt_forensics *cmt_forensics_new(const struct cmt_forensics_options *opt)
{
    struct cmt_forensics *f = calloc(1, sizeof *f);
    if (!f)
        return NULL;
    if (opt)
        f->opt = *opt;
    f->observer = (struct cmt_replay_observer){
        .ctx = f,
        /* on_change: cmt_frag_init */
        .on_failure = on_failure,
        .on_record = on_record,
        .on_finish = on_finish,
    };
    f->checkpoint_interval = 1;
    cmt_churn_init(&f->churn);
    cmt_frag_init(f);
    if (cmt_live_set_init(&f->pitched) != 0) {
        cmt_churn_free(&f->churn);
        free(f);
        return NULL;
    }
    return f;
}

int cmt_forensics_attach(struct cmt_forensics *f, struct cmt_replay *r)
{
    return cmt_replay_add_observer(r, &f->observer);
}

void cmt_forensics_free(struct cmt_forensics *f)
{
    if (!f)
        return;
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        if (!f->devices[d])
            continue;
        cmt_addr_index_free(&f->devices[d]->index);
        free(f->devices[d]);
    }
    free(f->scratch);
    free(f->reserves);
    free(f->ipc_maps);
    free(f->bounds);
    cmt_addr_index_free(&f->reserve_index);
    cmt_churn_free(&f->churn);
    free(f->waste);
    free(f->openers);
    cmt_live_set_free(&f->pitched);
    free(f->pools);
    free(f);
}

int cmt_forensics_finish(struct cmt_forensics *f, const struct cmt_replay *r)
{
    if (f->finished)
        return 0;
    f->finished = true;
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        struct cmt_device_forensics *dev = f->devices[d];
        if (!dev)
            continue;
        if (cmt_frag_checkpoint(f, r, d, r->last_ts, NULL) != 0)
            return -1;
        /* Did the allocations that bounded the worst holes outlive the run? */
        for (size_t i = 0; i < dev->worst.n_top; i++) {
            struct cmt_hole_view *h = &dev->worst.top[i];
            struct cmt_live l;
            h->left_live_at_exit = cmt_live_set_find(&r->live, CMT_NS_POINTER, h->left.addr, &l) && l.ts == h->left.ts;
            h->right_live_at_exit =
                cmt_live_set_find(&r->live, CMT_NS_POINTER, h->right.addr, &l) && l.ts == h->right.ts;
        }
    }
    return 0;
}
