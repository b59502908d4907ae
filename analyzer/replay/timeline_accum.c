/* SPDX-License-Identifier: MIT */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

void cmt_timeline_init(struct cmt_timeline *t)
{
    memset(t, 0, sizeof *t);
}

void cmt_timeline_free(struct cmt_timeline *t)
{
    for (size_t i = 0; i < t->n_series; i++) {
        free(t->series[i]->cells);
        free(t->series[i]);
    }
    free(t->series);
    free(t->counts);
    memset(t, 0, sizeof *t);
}

void cmt_timeline_set_origin(struct cmt_timeline *t, uint64_t origin)
{
    if (t->started)
        return;
    t->origin = origin;
    t->origin_set = true;
}

static bool start(struct cmt_timeline *t, uint64_t ts)
{
    t->counts = calloc(CMT_TIMELINE_BUCKETS, sizeof *t->counts);
    if (!t->counts) {
        t->out_of_memory = true;
        return false;
    }
    if (!t->origin_set || ts < t->origin)
        t->origin = ts;
    t->started = true;
    t->shift = CMT_TIMELINE_FIRST_WIDTH_SHIFT;
    t->cur = 0;
    t->cur_counts = t->counts;
    t->cur_end = t->origin + (1ull << t->shift);
    return true;
}

static struct cmt_timeline_cell merge_cells(struct cmt_timeline_cell a, struct cmt_timeline_cell b)
{
    return (struct cmt_timeline_cell){
        .min = a.min < b.min ? a.min : b.min,
        .max = a.max > b.max ? a.max : b.max,
        .last = b.last,
    };
}

/* Halves the resolution: buckets 2i and 2i+1 become bucket i. */
static void compact(struct cmt_timeline *t)
{
    size_t cur = t->cur;
    for (size_t s = 0; s < t->n_series; s++) {
        struct cmt_timeline_cell *c = t->series[s]->cells;
        for (size_t i = 0; 2 * i <= cur; i++)
            c[i] = 2 * i + 1 <= cur ? merge_cells(c[2 * i], c[2 * i + 1]) : c[2 * i];
    }
    struct cmt_timeline_counts *n = t->counts;
    for (size_t i = 0; 2 * i <= cur; i++) {
        struct cmt_timeline_counts m = n[2 * i];
        if (2 * i + 1 <= cur) {
            m.allocs += n[2 * i + 1].allocs;
            m.frees += n[2 * i + 1].frees;
            m.failures += n[2 * i + 1].failures;
        }
        n[i] = m;
    }
    t->cur = cur / 2;
    memset(n + t->cur + 1, 0, (CMT_TIMELINE_BUCKETS - t->cur - 1) * sizeof *n);
    t->shift++;
    t->cur_end = t->origin + ((uint64_t)(t->cur + 1) << t->shift);
}

/* Makes the bucket holding ts current. Buckets skipped over carry the live
 * bytes unchanged. */
static void advance(struct cmt_timeline *t, uint64_t ts)
{
    if (ts < t->cur_end)
        return;
    uint64_t idx = (ts - t->origin) >> t->shift;
    while (idx >= CMT_TIMELINE_BUCKETS) {
        compact(t);
        idx = (ts - t->origin) >> t->shift;
    }
    for (size_t s = 0; s < t->n_series; s++) {
        struct cmt_timeline_series *se = t->series[s];
        struct cmt_timeline_cell carry = {se->live, se->live, se->live};
        for (size_t b = t->cur + 1; b <= idx; b++)
            se->cells[b] = carry;
        se->cur_cell = se->cells + idx;
    }
    t->cur = (size_t)idx;
    t->cur_counts = t->counts + idx;
    t->cur_end = t->origin + ((idx + 1) << t->shift);
}

void cmt_timeline_event_slow(struct cmt_timeline *t, uint64_t ts, unsigned type, bool failed)
{
    if (!t->started && !start(t, ts))
        return;
    if (!t->counts)
        return;
    advance(t, ts);
    struct cmt_timeline_counts *c = &t->counts[t->cur];
    if (failed)
        c->failures++;
    else if (type == CMT_REC_ALLOC)
        c->allocs++;
    else
        c->frees++;
    if (ts > t->end_ts)
        t->end_ts = ts;
}

struct cmt_timeline_series *cmt_timeline_series_new(struct cmt_timeline *t, int32_t device, unsigned kind)
{
    if (device < -1 || device >= CMT_MAX_TIMELINE_DEVICES - 1 || kind > CMT_TIMELINE_TOTAL)
        return NULL;
    int16_t *slot = &t->slot[device + 1][kind];
    if (*slot)
        return t->series[*slot - 1];
    struct cmt_timeline_series **list = realloc(t->series, (t->n_series + 1) * sizeof *list);
    if (!list) {
        t->out_of_memory = true;
        return NULL;
    }
    t->series = list;
    struct cmt_timeline_series *s = malloc(sizeof *s);
    /* Zero before this instant: it had nothing live. */
    struct cmt_timeline_cell *cells = calloc(CMT_TIMELINE_BUCKETS, sizeof *cells);
    if (!s || !cells) {
        free(s);
        free(cells);
        t->out_of_memory = true;
        return NULL;
    }
    *s = (struct cmt_timeline_series){.device = device, .kind = (uint8_t)kind, .cells = cells, .cur_cell = cells + t->cur};
    t->series[t->n_series] = s;
    *slot = (int16_t)++t->n_series;
    return s;
}

void cmt_timeline_finish(struct cmt_timeline *t, uint64_t ts)
{
    if (!t->started || !t->counts)
        return;
    advance(t, ts);
    if (ts > t->end_ts)
        t->end_ts = ts;
}

size_t cmt_timeline_used(const struct cmt_timeline *t)
{
    return t->started && t->counts ? t->cur + 1 : 0;
}

uint64_t cmt_timeline_width(const struct cmt_timeline *t)
{
    return 1ull << t->shift;
}

const struct cmt_timeline_series *cmt_timeline_find(const struct cmt_timeline *t, int32_t device, unsigned kind)
{
    if (device < -1 || device >= CMT_MAX_TIMELINE_DEVICES - 1 || kind > CMT_TIMELINE_TOTAL)
        return NULL;
    int16_t slot = t->slot[device + 1][kind];
    return slot ? t->series[slot - 1] : NULL;
}

const char *cmt_timeline_kind_name(unsigned kind)
{
    return kind == CMT_TIMELINE_TOTAL ? "total" : cmt_kind_name(kind);
}

/* Output order: devices in order, host last; on a device the total first,
 * then its kinds, then managed memory. */
static int kind_rank(unsigned kind)
{
    static const int rank[CMT_KIND_COUNT + 1] = {
        [CMT_TIMELINE_TOTAL] = 0, [CMT_KIND_DEVICE] = 1,      [CMT_KIND_ASYNC] = 2,        [CMT_KIND_VMM_PHYSICAL] = 3,
        [CMT_KIND_ARRAY] = 4,     [CMT_KIND_MANAGED] = 5,     [CMT_KIND_HOST_PINNED] = 6,  [CMT_KIND_VMM_RESERVE] = 7,
        [CMT_KIND_VMM_MAP] = 8};
    return kind <= CMT_TIMELINE_TOTAL ? rank[kind] : 9;
}

static int series_order(const void *pa, const void *pb)
{
    const struct cmt_timeline_series *a = *(const struct cmt_timeline_series *const *)pa;
    const struct cmt_timeline_series *b = *(const struct cmt_timeline_series *const *)pb;
    uint32_t da = (uint32_t)a->device, db = (uint32_t)b->device; /* -1 sorts last */
    if (da != db)
        return da < db ? -1 : 1;
    return kind_rank(a->kind) - kind_rank(b->kind);
}

int cmt_timeline_resample(const struct cmt_timeline *t, size_t max_buckets, struct cmt_timeline_view *v)
{
    memset(v, 0, sizeof *v);
    size_t used = cmt_timeline_used(t);
    if (max_buckets == 0)
        max_buckets = 1;
    size_t group = used > max_buckets ? (used + max_buckets - 1) / max_buckets : 1;
    v->n = used ? (used + group - 1) / group : 0;
    v->origin = t->origin;
    /* A group of buckets can reach 2^64 ns (a trace chooses its times): the
     * width then saturates rather than wrapping to 0, which divided by zero
     * in cmt_timeline_view_bucket (`timeline --csv --buckets 1` died of
     * SIGFPE; found by the fuzzer). */
    v->width = group > UINT64_MAX >> t->shift ? UINT64_MAX : (uint64_t)group << t->shift;
    v->end = t->end_ts > t->origin ? t->end_ts : t->origin;
    v->n_series = t->n_series;
    v->series = calloc(t->n_series ? t->n_series : 1, sizeof *v->series);
    v->cells = calloc((t->n_series ? t->n_series : 1) * (v->n ? v->n : 1), sizeof *v->cells);
    v->counts = calloc(v->n ? v->n : 1, sizeof *v->counts);
    if (!v->series || !v->cells || !v->counts) {
        cmt_timeline_view_free(v);
        return -1;
    }
    for (size_t s = 0; s < t->n_series; s++)
        v->series[s] = t->series[s];
    qsort(v->series, v->n_series, sizeof *v->series, series_order);
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_cell *src = v->series[s]->cells;
        struct cmt_timeline_cell *dst = &v->cells[s * v->n];
        for (size_t b = 0; b < used; b++) {
            size_t k = b / group;
            dst[k] = b % group ? merge_cells(dst[k], src[b]) : src[b];
        }
    }
    for (size_t b = 0; b < used; b++) {
        struct cmt_timeline_counts *c = &v->counts[b / group];
        c->allocs += t->counts[b].allocs;
        c->frees += t->counts[b].frees;
        c->failures += t->counts[b].failures;
    }
    return 0;
}

void cmt_timeline_view_free(struct cmt_timeline_view *v)
{
    free(v->series);
    free(v->cells);
    free(v->counts);
    memset(v, 0, sizeof *v);
}

uint64_t cmt_timeline_view_start(const struct cmt_timeline_view *v, size_t b)
{
    if (b && b > (UINT64_MAX - v->origin) / v->width)
        return UINT64_MAX;
    return v->origin + b * v->width;
}

size_t cmt_timeline_view_bucket(const struct cmt_timeline_view *v, uint64_t ts)
{
    if (v->n == 0 || ts <= v->origin)
        return 0;
    uint64_t b = (ts - v->origin) / v->width;
    return b < v->n ? (size_t)b : v->n - 1;
}
