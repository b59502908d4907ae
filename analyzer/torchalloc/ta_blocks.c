/* SPDX-License-Identifier: MIT */
/* The cache's blocks (PyTorch 2.11's Block): made, deleted, joined with a
 * free neighbour, cached in their pool, and the reserve they count in. Every
 * other part (the request's way, segments, expandable segments, releases)
 * builds on these. */
#include <stdlib.h>

#include "ta_internal.h"

uint32_t ta_block_new(struct cmt_ta_allocator *a, uint64_t addr, uint64_t size, uint64_t stream, uint16_t pool,
                      uint32_t es, uint8_t cls, bool mapped)
{
    uint32_t i = a->free_blocks;
    if (i != TA_NIL) {
        a->free_blocks = a->b[i].next;
    } else {
        if (a->n_blocks == a->cap_blocks) {
            uint32_t cap = a->cap_blocks ? 2 * a->cap_blocks : 1024;
            if (cap <= a->cap_blocks || cap == TA_NIL) {
                a->oom = true;
                return TA_NIL;
            }
            struct ta_block *b = realloc(a->b, (size_t)cap * sizeof *b);
            if (!b) {
                a->oom = true;
                return TA_NIL;
            }
            a->b = b;
            a->cap_blocks = cap;
        }
        i = a->n_blocks++;
    }
    a->b[i] = (struct ta_block){
        .addr = addr,
        .size = size,
        .stream = stream,
        .prev = TA_NIL,
        .next = TA_NIL,
        .slot = TA_NIL,
        .es = es,
        .pool = pool,
        .flags = mapped ? TA_MAPPED : 0,
        .cls = cls,
    };
    return i;
}

void ta_block_delete(struct cmt_ta_allocator *a, uint32_t i)
{
    a->b[i].flags = 0;
    a->b[i].next = a->free_blocks;
    a->free_blocks = i;
}

uint64_t ta_try_merge(struct cmt_ta_allocator *a, uint32_t dst, uint32_t src)
{
    if (!ta_allocatable(a, src) || ((a->b[dst].flags ^ a->b[src].flags) & TA_MAPPED))
        return 0;
    struct ta_block *d = &a->b[dst], *s = &a->b[src];
    if (d->prev == src) { /* [src dst] */
        d->addr = s->addr;
        d->prev = s->prev;
        if (d->prev != TA_NIL)
            a->b[d->prev].next = dst;
    } else { /* [dst src] */
        d->next = s->next;
        if (d->next != TA_NIL)
            a->b[d->next].prev = dst;
    }
    uint64_t joined = s->size;
    d->size += joined;
    ta_set_erase(a, ta_set_of(a, src), src);
    ta_block_delete(a, src);
    return joined;
}

void ta_cache_block(struct cmt_ta_allocator *a, uint32_t i)
{
    struct ta_pool *p = &a->pools[a->b[i].pool];
    a->b[i].gc_base = p->gc_calls;
    ta_set_insert(a, &p->blocks, i);
}

void ta_reserve(struct cmt_ta_allocator *a, uint8_t cls, uint64_t bytes, bool add)
{
    if (add) {
        a->st.reserved += bytes;
        a->st.cls[cls].reserved += bytes;
        if (a->st.reserved > a->st.peak_reserved) {
            a->st.peak_reserved = a->st.reserved;
            a->st.peak_reserved_ts = a->now;
            a->peak_pending = true;
        }
    } else {
        a->st.reserved -= bytes;
        a->st.cls[cls].reserved -= bytes;
    }
}

void ta_free_block(struct cmt_ta_allocator *a, uint32_t i)
{
    uint32_t prev = a->b[i].prev, next = a->b[i].next;
    ta_try_merge(a, i, prev);
    ta_try_merge(a, i, next);
    a->b[i].slot = TA_NIL;
    ta_cache_block(a, i);
}
