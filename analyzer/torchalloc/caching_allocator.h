/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CACHING_ALLOCATOR_H
#define CUMEMTRACE_ANALYZER_CACHING_ALLOCATOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ta_settings.h"

/* A model of one device's PyTorch CUDA caching allocator (PyTorch 2.11,
 * c10/cuda/CUDACachingAllocator.cpp; docs/design.md, "What if"): tensor
 * requests and releases in, the segments it would reserve out, under any
 * settings and any device size. Written from the allocator's contracts,
 * rule by rule: small and large pools per stream, best fit by (stream,
 * size, address), splitting and max_split_size, the 2 MiB, 20 MiB and
 * per-tensor segments, expandable segments mapped and unmapped page by
 * page, the releases before an out-of-memory failure and the retry, the
 * garbage collection under a memory fraction, empty_cache.
 *
 * A tensor is named by a slot, a small number the caller chooses (the
 * trace's addresses belong to the recorded run, not to this one). The
 * device's room is told, not known: cmt_ta_set_limit says how many bytes
 * the cache may reserve in all before cudaMalloc (or cuMemCreate) fails.
 * Addresses of segments are the recorded ones where the replay makes a
 * segment of a recorded segment's size (cmt_ta_address_hint), else made up
 * below the others: they only break ties between cached blocks of one size,
 * as the driver's addresses do in PyTorch.
 *
 * Cost: O(log n) per request and release, n the cached blocks of its pool;
 * releasing the cache walks it. Memory: the live blocks and segments. */

struct cmt_ta_allocator;

/* Segment classes: where reserved bytes sit. */
enum cmt_ta_class {
    CMT_TA_CLASS_SMALL,      /* 2 MiB segments of the small pool (requests up to 1 MiB) */
    CMT_TA_CLASS_LARGE,      /* large_segment_size segments shared by requests under 10 MiB */
    CMT_TA_CLASS_HUGE,       /* a segment per request of 10 MiB or more */
    CMT_TA_CLASS_EXPANDABLE, /* pages mapped into expandable segments */
    CMT_TA_CLASS_COUNT
};

struct cmt_ta_class_bytes {
    uint64_t reserved, allocated;
};

struct cmt_ta_stats {
    /* now */
    uint64_t allocated, reserved, requested;
    struct cmt_ta_class_bytes cls[CMT_TA_CLASS_COUNT];
    /* max_memory_reserved() and max_memory_allocated() */
    uint64_t peak_reserved, peak_allocated;
    uint64_t peak_reserved_ts, peak_allocated_ts; /* the clock given (cmt_ta_set_clock) */
    /* right after the request that reached the reserved peak */
    uint64_t allocated_at_peak;
    struct cmt_ta_class_bytes at_peak[CMT_TA_CLASS_COUNT];
    /* segments cudaMalloc'd and cudaFree'd; expandable segments' pages
     * mapped and unmapped (bytes and calls) and the address ranges made */
    uint64_t segments_made, segments_released;
    uint64_t maps, mapped_bytes, unmaps, unmapped_bytes, expandable_segments;
    /* what happened to requests */
    uint64_t requests, served_from_cache, failures;
    uint64_t retries;       /* requests that needed the cache freed first (num_alloc_retries) */
    uint64_t released_for_retry_bytes; /* freed before a retry (oversize blocks, then everything unsplit) */
    uint64_t gc_released_bytes;        /* freed by the garbage collection */
    uint64_t empty_caches, empty_cache_released_bytes;
};

/* A request the model could not serve: PyTorch would raise
 * torch.OutOfMemoryError here. The figures are the model's after it freed
 * what it could. */
struct cmt_ta_failure {
    uint64_t request, rounded, alloc_size;
    uint64_t allocated, reserved;
    uint64_t limit;         /* what the cache could reserve in all (the device, or the fraction's) */
    bool by_fraction;       /* the memory fraction refused it, not the device */
};

/* NULL when out of memory. device_total sizes the address ranges of
 * expandable segments (PyTorch reserves 1 1/8 of the device's memory). */
struct cmt_ta_allocator *cmt_ta_new(const struct cmt_ta_settings *s, uint64_t device_total);
void cmt_ta_free_allocator(struct cmt_ta_allocator *a);

const struct cmt_ta_settings *cmt_ta_settings_of(const struct cmt_ta_allocator *a);
/* The cache may reserve at most limit bytes in all (UINT64_MAX: no limit). */
void cmt_ta_set_limit(struct cmt_ta_allocator *a, uint64_t limit);
/* set_per_process_memory_fraction: at most allowed bytes (UINT64_MAX:
 * none); the garbage collection works only under one. */
void cmt_ta_set_allowed(struct cmt_ta_allocator *a, uint64_t allowed);
uint64_t cmt_ta_allowed(const struct cmt_ta_allocator *a);
/* The time peaks are stamped with. */
void cmt_ta_set_clock(struct cmt_ta_allocator *a, uint64_t ts);
/* A segment the recorded run made: a segment of this size made next takes
 * this address if it is free. */
void cmt_ta_address_hint(struct cmt_ta_allocator *a, uint64_t addr, uint64_t size);

/* A tensor of size bytes on stream (pool 0/0: the default pools; another
 * id a private pool of its own, a CUDA graph's or torch.cuda.MemPool's).
 * Returns 0 served, 1 not served (out of memory: *f says why, if f), -1
 * when the analyzer itself ran out of memory. slot must not be live. */
int cmt_ta_malloc(struct cmt_ta_allocator *a, uint32_t slot, uint64_t size, uint64_t stream, uint64_t pool_id0,
                  uint64_t pool_id1, struct cmt_ta_failure *f);
/* The tensor let go (FREE_REQUESTED): no longer allocated; its block is
 * reusable once completed. Unknown or unserved slots are ignored. */
void cmt_ta_free_requested(struct cmt_ta_allocator *a, uint32_t slot);
/* Its block back in the cache (FREE_COMPLETED); the slot is free again. */
void cmt_ta_free_completed(struct cmt_ta_allocator *a, uint32_t slot);
/* torch.cuda.empty_cache(): every cached segment that holds no tensor is
 * released, free pages of expandable segments unmapped. */
void cmt_ta_empty_cache(struct cmt_ta_allocator *a);
/* Whether slot holds a served tensor. */
bool cmt_ta_slot_live(const struct cmt_ta_allocator *a, uint32_t slot);

const struct cmt_ta_stats *cmt_ta_stats(const struct cmt_ta_allocator *a);
/* The analyzer ran out of memory inside (the model stopped changing). */
bool cmt_ta_out_of_memory(const struct cmt_ta_allocator *a);

const char *cmt_ta_class_name(enum cmt_ta_class c); /* "small (2 MiB segments)" ... */
const char *cmt_ta_class_key(enum cmt_ta_class c);  /* "small", "large", "huge", "expandable" */

#endif
