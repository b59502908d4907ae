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
 * its bytes are not part of the span.
 *
 * Nor is address space that cannot be memory (struct cmt_span_bounds): a gap
 * with a VMM reservation in it (cuMemAddressReserve: PyTorch's
 * expandable_segments reserves more than the device holds, and the
 * driver's plain allocations sit on either side), or one wider than the
 * device's whole memory (an H200's driver put cuBLAS's small and large
 * workspaces 127 TiB apart), or one holding an open mapping of another
 * process's memory (cudaIpcOpenMemHandle and the like: frag.c merges the
 * replay's open IPC imports into the bounds). */

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
    uint64_t address_space;   /* bytes of gaps that are address space, not memory (cmt_span_bounds): neither holes nor span */
};

/* What tells a gap of address space from a hole: every live VMM
 * reservation (address space only, of any device: one virtual address
 * space), sorted by address, and the device's memory. */
struct cmt_span_bounds {
    const struct cmt_interval *reserves; /* [addr, end) */
    size_t n_reserves;
    uint64_t device_bytes; /* its total memory from the device samples; 0: unknown */
};

/* A gap [lo, hi) between neighbours of regions a and b: what it is. */
enum cmt_gap_kind {
    CMT_GAP_HOLE,
    CMT_GAP_PADDING,        /* narrower than CMT_HOLE_MIN_BYTES */
    CMT_GAP_BETWEEN_REGIONS,
    CMT_GAP_ADDRESS_SPACE,  /* a reservation in it, or wider than the device */
};

/* Gaps must come in increasing address order for one *cursor (start it at
 * 0): reservations below them are skipped once. b may be NULL. */
static inline enum cmt_gap_kind cmt_holes_gap_kind(const struct cmt_span_bounds *b, size_t *cursor, uint64_t lo,
                                                   uint64_t hi, uint8_t a, uint8_t region_b)
{
    if (a != region_b)
        return CMT_GAP_BETWEEN_REGIONS;
    if (b) {
        if (b->device_bytes && hi - lo > b->device_bytes)
            return CMT_GAP_ADDRESS_SPACE;
        while (*cursor < b->n_reserves && b->reserves[*cursor].end <= lo)
            (*cursor)++;
        if (*cursor < b->n_reserves && b->reserves[*cursor].addr < hi)
            return CMT_GAP_ADDRESS_SPACE;
    }
    return hi - lo >= CMT_HOLE_MIN_BYTES ? CMT_GAP_HOLE : CMT_GAP_PADDING;
}

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
    return st->hi - st->lo - st->between_regions - st->address_space;
}

/* Scans intervals sorted by address. Overlapping intervals (a damaged trace)
 * are tolerated: a gap starts where the furthest end so far is. Keeps the k
 * largest holes in top, largest first (ties: lower address first); *n_top
 * says how many. top may be NULL when k is 0; bounds may be NULL (every gap
 * of one region is then a hole or padding). */
void cmt_holes_scan(const struct cmt_interval *v, size_t n, const struct cmt_span_bounds *bounds,
                    struct cmt_hole_stats *st, struct cmt_hole *top, size_t k, size_t *n_top);

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
