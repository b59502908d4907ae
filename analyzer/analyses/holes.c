/* SPDX-License-Identifier: MIT */
#include "holes.h"

#include <stdlib.h>
#include <string.h>

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

void cmt_holes_scan(const struct cmt_interval *v, size_t n, const struct cmt_span_bounds *bounds,
                    struct cmt_hole_stats *st, struct cmt_hole *top, size_t k, size_t *n_top)
{
    size_t cursor = 0;
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
            enum cmt_gap_kind kind =
                cmt_holes_gap_kind(bounds, &cursor, reach, v[i].addr, v[reach_index].region, v[i].region);
            if (kind == CMT_GAP_BETWEEN_REGIONS) {
                st->between_regions += gap;
            } else if (kind == CMT_GAP_ADDRESS_SPACE) {
                st->address_space += gap;
            } else if (kind == CMT_GAP_HOLE) {
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

/* Radix digits of at most this many bits: 2048 counters (16 KiB) fit the
 * L1 cache with room for the data streaming through. */
#define SORT_DIGIT_BITS_MAX 11

struct cmt_interval *cmt_intervals_sort_by_addr(struct cmt_interval *v, struct cmt_interval *tmp, size_t n)
{
    if (n < 2)
        return v;
    /* Only the bits where addresses differ need sorting: allocations are
     * 512-byte aligned and share their high bits, so a device's span takes
     * 2 or 3 passes of 11 bits or fewer (evenly split) instead of 8 of 8. */
    uint64_t differ = 0;
    for (size_t i = 1; i < n; i++)
        differ |= v[i].addr ^ v[0].addr;
    if (!differ)
        return v;
    unsigned lo = (unsigned)__builtin_ctzll(differ);
    unsigned bits = 64 - (unsigned)__builtin_clzll(differ) - lo;
    unsigned passes = (bits + SORT_DIGIT_BITS_MAX - 1) / SORT_DIGIT_BITS_MAX;
    unsigned width = (bits + passes - 1) / passes;
    size_t buckets = (size_t)1 << width, mask = buckets - 1;
    size_t start[(size_t)1 << SORT_DIGIT_BITS_MAX];
    for (unsigned p = 0; p < passes; p++) {
        unsigned shift = lo + p * width;
        memset(start, 0, buckets * sizeof *start);
        for (size_t i = 0; i < n; i++)
            start[(v[i].addr >> shift) & mask]++;
        size_t sum = 0;
        for (size_t d = 0; d < buckets; d++) {
            size_t c = start[d];
            start[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            tmp[start[(v[i].addr >> shift) & mask]++] = v[i];
        struct cmt_interval *t = v;
        v = tmp;
        tmp = t;
    }
    return v;
}

long cmt_intervals_of_device(const struct cmt_live_set *s, int32_t device, struct cmt_interval **buf, size_t *cap,
                             struct cmt_interval **sorted)
{
    *sorted = *buf;
    if (device < 0)
        return 0; /* no span: cmt_holes_counts */
    size_t n = 0;
    /* the table's slots, then those by id (live_set.h) */
    const struct cmt_live_slot *range[2][2] = {{s->slots, s->slots + s->cap}, {s->by_id, s->by_id + s->id_cap}};
    for (int part = 0; part < 2; part++) {
        for (const struct cmt_live_slot *e = range[part][0]; e < range[part][1]; e++) {
            /* cmt_holes_counts on the slot itself: no copy of the others */
            if (cmt_live_slot_tag(e) != CMT_NS_POINTER + 1 || e->device != device ||
                (cmt_live_slot_kind(e) != CMT_KIND_DEVICE && cmt_live_slot_kind(e) != CMT_KIND_ASYNC))
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
                .addr = e->addr,
                .end = e->addr + (e->size ? e->size : 1),
                .ts = e->ts,
                .stack = e->stack,
                .region = cmt_live_slot_kind(e) == CMT_KIND_ASYNC ? CMT_REGION_POOL : CMT_REGION_PLAIN,
            };
        }
    }
    *sorted = *buf;
    if (n < 2)
        return (long)n;
    /* The sort's second buffer is the upper half of *buf. */
    if (*cap < 2 * n) {
        struct cmt_interval *b = realloc(*buf, 2 * n * sizeof *b);
        if (!b)
            return -1;
        *buf = b;
        *cap = 2 * n;
    }
    *sorted = cmt_intervals_sort_by_addr(*buf, *buf + n, n);
    return (long)n;
}
