/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HOLES_H
#define CUMEMTRACE_ANALYZER_HOLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cumemtrace/format.h"
#include "live_set.h"

/* Holes: the free address ranges between a device's live allocations, inside
 * the span from its lowest to its highest live address (docs/fragmentation.md).
 * The allocations that count are the device's contiguous ones: plain device
 * memory (cudaMalloc, cuMemAlloc, pitched) and stream-ordered pool
 * allocations. Managed memory, VMM mappings (physical pages need no
 * contiguous addresses) and arrays (opaque handles) do not.
 *
 * The two count in separate regions: a GPU driver hands out plain device
 * memory and each pool's memory from address ranges reserved apart (often
 * terabytes apart), so the gap between a plain allocation and a pool
 * allocation next to it says nothing about free memory. It is not a hole;
 * its bytes are not part of the span. */

enum cmt_hole_region {
    CMT_REGION_PLAIN = 0, /* cudaMalloc, cuMemAlloc, pitched */
    CMT_REGION_POOL = 1,  /* stream-ordered pool allocations */
};

/* A gap narrower than this is alignment padding, not a hole: no allocation
 * fits in it (the simulated device and NVIDIA's drivers hand out device
 * memory in 512-byte steps). */
#define CMT_HOLE_MIN_BYTES 512u

/* One live allocation of the span. */
struct cmt_interval {
    uint64_t addr, end; /* [addr, end) */
    uint64_t ts;        /* when it was allocated */
    uint32_t stack;     /* its allocation's stack id */
    uint32_t opener;    /* stack id of the allocation whose release last opened the hole to its right (0: none known) */
    uint64_t opened_ts; /* when that release happened */
    uint8_t region;     /* enum cmt_hole_region */
};

/* One hole and the allocations on either side of it (indexes into the
 * interval array it was found in). */
struct cmt_hole {
    uint64_t addr, size;
    size_t left, right;
};

struct cmt_hole_stats {
    uint64_t allocations;  /* intervals in the span */
    uint64_t lo, hi;       /* the span [lo, hi); both 0 when empty */
    uint64_t live_bytes;   /* bytes of the intervals */
    uint64_t count;        /* holes (gaps >= CMT_HOLE_MIN_BYTES) */
    uint64_t total;        /* their bytes */
    uint64_t largest;
    uint64_t padding;      /* bytes of narrower gaps */
    uint64_t between_regions; /* bytes between neighbours of different regions: neither holes nor span */
};

/* True when s is an allocation that belongs to its device's span. */
static inline bool cmt_holes_counts(const struct cmt_live *l)
{
    return l->ns == CMT_NS_POINTER && l->device >= 0 && (l->kind == CMT_KIND_DEVICE || l->kind == CMT_KIND_ASYNC);
}

/* The region of an allocation that counts. */
static inline uint8_t cmt_holes_region(const struct cmt_live *l)
{
    return l->kind == CMT_KIND_ASYNC ? CMT_REGION_POOL : CMT_REGION_PLAIN;
}

/* The span's bytes: from the lowest to the highest live address, less the
 * gaps between regions. */
static inline uint64_t cmt_holes_span_bytes(const struct cmt_hole_stats *st)
{
    return st->hi - st->lo - st->between_regions;
}

/* Scans intervals sorted by address. Overlapping intervals (a damaged trace)
 * are tolerated: a gap starts where the furthest end so far is. Keeps the k
 * largest holes in top, largest first (ties: lower address first); *n_top
 * says how many. top may be NULL when k is 0. */
void cmt_holes_scan(const struct cmt_interval *v, size_t n, struct cmt_hole_stats *st, struct cmt_hole *top, size_t k,
                    size_t *n_top);

/* 1 - largest / total: 0 when every free byte of the span is one range (or
 * there is none), towards 1 as it splits into many small ones. */
static inline double cmt_holes_ratio(const struct cmt_hole_stats *st)
{
    return st->total ? 1.0 - (double)st->largest / (double)st->total : 0.0;
}

/* Bytes free in the span outside its largest hole: what only requests
 * smaller than the largest hole could use. */
static inline uint64_t cmt_holes_stranded(const struct cmt_hole_stats *st)
{
    return st->total - st->largest;
}

/* The span allocations of device in s, sorted by address: *sorted points
 * at them, inside *buf (grown as needed, to twice their count for the sort;
 * the caller frees it). Returns how many, or -1 when out of memory. */
long cmt_intervals_of_device(const struct cmt_live_set *s, int32_t device, struct cmt_interval **buf, size_t *cap,
                             struct cmt_interval **sorted);

/* Sorts v[0..n) by address, stably, with tmp (room for n) as the second
 * buffer; returns the one that holds the result (v or tmp). A radix sort:
 * checkpoints sort a device's live allocations, thousands at a time. */
struct cmt_interval *cmt_intervals_sort_by_addr(struct cmt_interval *v, struct cmt_interval *tmp, size_t n);

#endif
