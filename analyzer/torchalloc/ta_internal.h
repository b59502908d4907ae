/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TA_INTERNAL_H
#define CUMEMTRACE_ANALYZER_TA_INTERNAL_H

/* The model's state, shared by its files (not by its users: they have
 * caching_allocator.h). Blocks live in one array and name each other by
 * index; a block is in at most one ordered set at a time (its pool's free
 * blocks or its pool's unmapped ranges), so the set's links live in it. */

#include <stdbool.h>
#include <stdint.h>

#include "caching_allocator.h"
#include "ta_rounding.h"

#define TA_NIL UINT32_MAX

enum ta_flag {
    TA_ALLOCATED = 1u << 0, /* a tensor's (until FREE_REQUESTED) */
    TA_MAPPED = 1u << 1,    /* backed by memory (always, outside expandable segments) */
    TA_IN_SET = 1u << 2,    /* in its pool's free set (mapped) or unmapped set */
    TA_PENDING = 1u << 3,   /* released, its stream uses not yet over (until FREE_COMPLETED) */
};

struct ta_block {
    uint64_t addr, size, requested, stream;
    uint64_t gc_base;     /* its pool's get_free_block count when it was cached */
    uint32_t prev, next;  /* neighbours in its segment, TA_NIL at its ends */
    union {
        struct {
            uint32_t left, right, parent, prio;
        } tree;           /* in a set */
        uint32_t pending_at; /* TA_PENDING: its index in the pending list */
    } u;
    uint32_t slot;        /* the tensor's, while allocated or pending */
    uint32_t es;          /* expandable segment index + 1; 0: a cudaMalloc segment */
    uint16_t pool;
    uint8_t flags;
    uint8_t cls;          /* enum cmt_ta_class of its segment */
};

/* A treap ordered by (stream, size, address), or by (stream, address). */
struct ta_set {
    uint32_t root;
    bool by_address;
};

struct ta_pool {
    struct ta_set blocks;   /* cached, mapped blocks */
    struct ta_set unmapped; /* expandable segments' unmapped ranges */
    bool is_small;
    uint64_t id0, id1;      /* its MempoolId_t; 0/0 the default pools */
    uint64_t gc_calls;      /* get_free_blocks_call_count */
};

struct ta_es {
    uint64_t base, page, pages;
    bool live;
};

/* A live segment's address range (cudaMalloc'd, or an expandable
 * segment's reservation), sorted by address: new addresses must not
 * overlap them. */
struct ta_range {
    uint64_t addr, size;
};

#define TA_HINTS 64

struct cmt_ta_allocator {
    struct cmt_ta_settings s;
    uint64_t device_total;
    struct ta_block *b;
    uint32_t n_blocks, cap_blocks, free_blocks; /* free_blocks: a list through .next */
    struct ta_pool *pools;
    uint32_t n_pools, cap_pools; /* 0: small, 1: large, then private pairs */
    struct ta_es *es;
    uint32_t n_es, cap_es;
    uint32_t *slot_block;
    size_t cap_slots;
    uint32_t *pending;
    size_t n_pending, cap_pending;
    struct ta_range *ranges;
    size_t n_ranges, cap_ranges;
    struct ta_range hints[TA_HINTS];
    size_t n_hints;
    uint64_t synth_next;  /* next made-up cudaMalloc address is below this */
    uint64_t es_next;     /* next made-up expandable segment base */
    uint64_t limit, allowed;
    uint64_t now;
    uint64_t rng;
    bool peak_pending;    /* the reserved peak moved during this request */
    bool oom;             /* the analyzer's own memory ran out */
    struct cmt_ta_stats st;
};

/* Blocks (ta_blocks.c) */
uint32_t ta_block_new(struct cmt_ta_allocator *a, uint64_t addr, uint64_t size, uint64_t stream, uint16_t pool,
                      uint32_t es, uint8_t cls, bool mapped);
void ta_block_delete(struct cmt_ta_allocator *a, uint32_t i);
static inline bool ta_is_split(const struct cmt_ta_allocator *a, uint32_t i)
{
    return a->b[i].prev != TA_NIL || a->b[i].next != TA_NIL;
}
/* Free and settled (not a tensor's, no stream use pending). */
static inline bool ta_allocatable(const struct cmt_ta_allocator *a, uint32_t i)
{
    return i != TA_NIL && !(a->b[i].flags & (TA_ALLOCATED | TA_PENDING));
}
/* Joins src into dst when both are free, settled and equally mapped;
 * returns the bytes joined (try_merge_blocks). */
uint64_t ta_try_merge(struct cmt_ta_allocator *a, uint32_t dst, uint32_t src);
/* Caches a free block in its pool (insert_into_blocks). */
void ta_cache_block(struct cmt_ta_allocator *a, uint32_t i);
/* The reserve changed by delta bytes in class cls (peaks follow). */
void ta_reserve(struct cmt_ta_allocator *a, uint8_t cls, uint64_t bytes, bool add);
/* A released block settles into the cache (free_block). */
void ta_free_block(struct cmt_ta_allocator *a, uint32_t i);

/* Ordered sets (ta_block_set.c) */
void ta_set_insert(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t i);
void ta_set_erase(struct cmt_ta_allocator *a, struct ta_set *s, uint32_t i);
/* The first block not below (stream, size, addr) (size ignored by address). */
uint32_t ta_set_lower_bound(const struct cmt_ta_allocator *a, const struct ta_set *s, uint64_t stream, uint64_t size,
                            uint64_t addr);
uint32_t ta_set_first(const struct cmt_ta_allocator *a, const struct ta_set *s);
uint32_t ta_set_last(const struct cmt_ta_allocator *a, const struct ta_set *s);
uint32_t ta_set_next(const struct cmt_ta_allocator *a, uint32_t i);
uint32_t ta_set_prev(const struct cmt_ta_allocator *a, uint32_t i);
static inline struct ta_set *ta_set_of(struct cmt_ta_allocator *a, uint32_t i)
{
    struct ta_pool *p = &a->pools[a->b[i].pool];
    return a->b[i].flags & TA_MAPPED ? &p->blocks : &p->unmapped;
}

/* cudaMalloc'd segments (ta_segments.c) */
/* A new segment of size bytes for pool and stream, or TA_NIL when the
 * device has no room. */
uint32_t ta_segment_alloc(struct cmt_ta_allocator *a, uint64_t size, uint64_t stream, uint16_t pool, uint8_t cls);
/* cudaFree of a cached, unsplit segment (release_block). */
void ta_segment_release(struct cmt_ta_allocator *a, uint32_t i);
int ta_range_add(struct cmt_ta_allocator *a, uint64_t addr, uint64_t size);
void ta_range_remove(struct cmt_ta_allocator *a, uint64_t addr);
bool ta_range_overlaps(const struct cmt_ta_allocator *a, uint64_t addr, uint64_t size);

/* Expandable segments (ta_expandable.c) */
uint32_t ta_expandable_alloc(struct cmt_ta_allocator *a, uint64_t stream, uint16_t pool, uint64_t size);
/* Unmaps the whole pages of a cached block (unmap_block). */
void ta_expandable_unmap_block(struct cmt_ta_allocator *a, uint32_t i);
/* Frees the address range of a segment left wholly unmapped. */
void ta_expandable_release(struct cmt_ta_allocator *a, uint32_t i);

/* Giving memory back (ta_release.c) */
bool ta_release_available_cached_blocks(struct cmt_ta_allocator *a, uint16_t pool, uint64_t stream, uint64_t size);
void ta_release_cached_blocks(struct cmt_ta_allocator *a, uint64_t *released);
void ta_garbage_collect(struct cmt_ta_allocator *a);

#endif
