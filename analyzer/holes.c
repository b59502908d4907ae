/* SPDX-License-Identifier: MIT */
#include "holes.h"

#include <stdlib.h>

#include "cumemtrace/format.h"

/* Inserts h into top (k slots, *n used), largest first. */
static void keep_largest(struct cmt_hole *top, size_t k, size_t *n, const struct cmt_hole *h)
{
    if (k == 0)
        return;
    size_t at = *n;
    while (at > 0 && top[at - 1].size < h->size)
        at--;
    if (at >= k)
        return;
    size_t last = *n < k ? *n : k - 1;
    for (size_t i = last; i > at; i--)
        top[i] = top[i - 1];
    top[at] = *h;
    if (*n < k)
        (*n)++;
}

void cmt_holes_scan(const struct cmt_interval *v, size_t n, struct cmt_hole_stats *st, struct cmt_hole *top, size_t k,
                    size_t *n_top)
{
    *st = (struct cmt_hole_stats){0};
    if (n_top)
        *n_top = 0;
    if (n == 0)
        return;
    st->allocations = n;
    st->lo = v[0].addr;
    uint64_t reach = v[0].end;
    size_t reach_index = 0;
    st->live_bytes = v[0].end - v[0].addr;
    for (size_t i = 1; i < n; i++) {
        st->live_bytes += v[i].end - v[i].addr;
        if (v[i].addr > reach) {
            uint64_t gap = v[i].addr - reach;
            if (v[i].region != v[reach_index].region) {
                st->between_regions += gap;
            } else if (gap >= CMT_HOLE_MIN_BYTES) {
                st->count++;
                st->total += gap;
                if (gap > st->largest)
                    st->largest = gap;
                struct cmt_hole h = {.addr = reach, .size = gap, .left = reach_index, .right = i};
                if (n_top)
                    keep_largest(top, k, n_top, &h);
            } else {
                st->padding += gap;
            }
        }
        if (v[i].end > reach) {
            reach = v[i].end;
            reach_index = i;
        }
    }
    st->hi = reach;
}

double cmt_holes_ratio(const struct cmt_hole_stats *st)
{
    return st->total ? 1.0 - (double)st->largest / (double)st->total : 0.0;
}

static int interval_cmp(const void *pa, const void *pb)
{
    const struct cmt_interval *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return 0;
}

long cmt_intervals_of_device(const struct cmt_live_set *s, int32_t device, struct cmt_interval **buf, size_t *cap)
{
    size_t n = 0;
    struct cmt_live live;
    const struct cmt_live *l = &live;
    for (size_t i = 0; i < s->cap; i++) {
        /* the slot first: most entries of another device need no copy */
        if (!s->slots[i].tag || s->slots[i].device != device || !cmt_live_set_at(s, i, &live) ||
            !cmt_holes_counts(l))
            continue;
        if (n == *cap) {
            size_t c = *cap ? *cap * 2 : 256;
            struct cmt_interval *b = realloc(*buf, c * sizeof *b);
            if (!b)
                return -1;
            *buf = b;
            *cap = c;
        }
        (*buf)[n++] = (struct cmt_interval){
            .addr = l->addr,
            .end = l->addr + (l->size ? l->size : 1),
            .ts = l->ts,
            .stack = l->stack,
            .region = cmt_holes_region(l),
        };
    }
    if (n > 1)
        qsort(*buf, n, sizeof **buf, interval_cmp);
    return (long)n;
}
