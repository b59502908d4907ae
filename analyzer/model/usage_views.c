/* SPDX-License-Identifier: MIT */
#include "usage_views.h"

#include <stdlib.h>
#include <string.h>

static int by_calls(const void *pa, const void *pb)
{
    const struct cmt_calls_row *a = pa, *b = pb;
    if (a->calls != b->calls)
        return a->calls > b->calls ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int by_short(const void *pa, const void *pb, void *ctx)
{
    const struct cmt_calls_row *rows = ctx;
    const struct cmt_calls_row *a = &rows[*(const size_t *)pa], *b = &rows[*(const size_t *)pb];
    if (a->short_lived != b->short_lived)
        return a->short_lived > b->short_lived ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

int cmt_calls_view_build(struct cmt_calls_view *v, struct cmt_frames *frames, const struct cmt_replay *rp,
                         const struct cmt_site_calls *sc)
{
    memset(v, 0, sizeof *v);
    v->rows = calloc(rp->n_active + 1, sizeof *v->rows);
    if (!v->rows)
        return -1;
    /* Sites in order of first allocation; canonical ids are given in the
     * order met (report.c does the same), so the merge is a scan of the
     * rows made so far, indexed by canonical id. */
    size_t *slot_of = NULL;
    size_t slots = 0;
    for (size_t k = 0; k < rp->n_active; k++) {
        uint32_t stack = rp->active_sites[k];
        struct cmt_site_calls_cell c = cmt_site_calls_get(sc, stack);
        if (!c.calls)
            continue;
        uint64_t canon = cmt_frames_canonical(frames, stack);
        if (canon >= slots) {
            size_t n = slots ? slots : 64;
            while (n <= canon)
                n *= 2;
            size_t *g = realloc(slot_of, n * sizeof *g);
            if (!g) {
                free(slot_of);
                return -1;
            }
            for (size_t i = slots; i < n; i++)
                g[i] = SIZE_MAX;
            slot_of = g;
            slots = n;
        }
        if (slot_of[canon] == SIZE_MAX) {
            slot_of[canon] = v->n;
            v->rows[v->n++] = (struct cmt_calls_row){
                .stack = canon, .api = rp->sites[stack].api, .kind = rp->sites[stack].kind};
        }
        struct cmt_calls_row *row = &v->rows[slot_of[canon]];
        row->calls += c.calls;
        row->alloc_bytes += rp->sites[stack].alloc_bytes;
        row->short_lived += c.short_lived;
        row->short_bytes += c.short_bytes;
        row->short_life_ns += c.short_life_ns;
        v->calls += c.calls;
        v->short_lived += c.short_lived;
    }
    free(slot_of);
    qsort(v->rows, v->n, sizeof *v->rows, by_calls);
    v->by_short = calloc(v->n + 1, sizeof *v->by_short);
    if (!v->by_short)
        return -1;
    for (size_t i = 0; i < v->n; i++)
        if (v->rows[i].short_lived)
            v->by_short[v->n_short++] = i;
    qsort_r(v->by_short, v->n_short, sizeof *v->by_short, by_short, v->rows);
    return 0;
}

void cmt_calls_view_free(struct cmt_calls_view *v)
{
    free(v->rows);
    free(v->by_short);
    memset(v, 0, sizeof *v);
}

static int by_peak(const void *pa, const void *pb)
{
    const struct cmt_thread_view_row *a = pa, *b = pb;
    if (a->use.peak != b->use.peak)
        return a->use.peak > b->use.peak ? -1 : 1;
    return a->use.tid < b->use.tid ? -1 : a->use.tid > b->use.tid;
}

int cmt_threads_view_build(struct cmt_threads_view *v, const struct cmt_trace_model *m, const struct cmt_thread_use *t)
{
    memset(v, 0, sizeof *v);
    v->rows = calloc(t->n_rows + 1, sizeof *v->rows);
    if (!v->rows)
        return -1;
    for (size_t i = 0; i < t->n_rows; i++) {
        v->rows[i].use = t->rows[i];
        v->rows[i].name = "";
        for (size_t k = 0; k < m->n_threads; k++)
            if (m->threads[k].tid == t->rows[i].tid)
                v->rows[i].name = cmt_model_string(m, m->threads[k].name_id);
    }
    v->n = t->n_rows;
    qsort(v->rows, v->n, sizeof *v->rows, by_peak);
    return 0;
}

void cmt_threads_view_free(struct cmt_threads_view *v)
{
    free(v->rows);
    memset(v, 0, sizeof *v);
}
