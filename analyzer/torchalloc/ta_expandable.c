/* SPDX-License-Identifier: MIT */
/* Expandable segments (expandable_segments:True; PyTorch's Note [Expandable
 * Segments]): per stream and pool one address range of 1 1/8 the device's
 * memory, mapped page by page (2 MiB pages for the small pool,
 * large_segment_size for the large one) as requests need them, the lowest
 * room first; free pages are unmapped by empty_cache and before an
 * out-of-memory failure. A mapping is all or nothing: its pages are created
 * one by one and given back when one cannot be. */
#include <stdlib.h>

#include "ta_internal.h"

static struct ta_es *es_of(struct cmt_ta_allocator *a, uint32_t i)
{
    return &a->es[a->b[i].es - 1];
}

/* The pages under [addr, addr + size), whole or partly covered, as a
 * range: what mapping it takes. */
static void page_cover(const struct ta_es *e, uint64_t addr, uint64_t size, uint64_t *begin, uint64_t *end)
{
    *begin = (addr - e->base) / e->page;
    *end = (addr + size - e->base + e->page - 1) / e->page;
}

/* The pages wholly inside [addr, addr + size): what can be unmapped. */
static void page_inside(const struct ta_es *e, uint64_t addr, uint64_t size, uint64_t *begin, uint64_t *end)
{
    *begin = (addr - e->base + e->page - 1) / e->page;
    *end = (addr + size - e->base) / e->page;
}

/* The cached block just below unmapped block i counts toward the room a
 * request needs (find_expandable_block). */
static bool has_room(const struct cmt_ta_allocator *a, uint32_t i, uint64_t size)
{
    uint64_t bytes = 0;
    while (bytes < size && ta_allocatable(a, i)) {
        bytes += a->b[i].size;
        i = a->b[i].next;
    }
    return bytes >= size;
}

static uint32_t new_segment(struct cmt_ta_allocator *a, uint64_t stream, uint16_t pool)
{
    uint64_t page = a->pools[pool].is_small ? CMT_TA_SMALL_BUFFER : a->s.large_segment_size;
    uint64_t space = a->device_total + a->device_total / 8;
    uint64_t pages = space / page + (space % page != 0);
    if (!pages)
        pages = 1;
    if (a->n_es == a->cap_es) {
        uint32_t cap = a->cap_es ? 2 * a->cap_es : 8;
        struct ta_es *e = realloc(a->es, cap * sizeof *e);
        if (!e) {
            a->oom = true;
            return TA_NIL;
        }
        a->es = e;
        a->cap_es = cap;
    }
    /* Address space is not memory: ranges far above the made-up cudaMalloc
     * addresses, each aligned to its page. */
    uint64_t base = (a->es_next + page - 1) / page * page;
    a->es_next = base + pages * page;
    if (ta_range_add(a, base, pages * page) != 0)
        return TA_NIL;
    a->es[a->n_es] = (struct ta_es){base, page, pages, true};
    uint32_t i = ta_block_new(a, base, pages * page, stream, pool, a->n_es + 1, CMT_TA_CLASS_EXPANDABLE, false);
    if (i == TA_NIL)
        return TA_NIL;
    a->n_es++;
    a->st.expandable_segments++;
    ta_set_insert(a, &a->pools[pool].unmapped, i);
    return i;
}

/* The lowest place in an expandable segment of pool and stream with room
 * for size bytes, free and unmapped together, or a new segment's range. */
static uint32_t find_room(struct cmt_ta_allocator *a, uint64_t stream, uint16_t pool, uint64_t size)
{
    struct ta_set *unmapped = &a->pools[pool].unmapped;
    for (uint32_t i = ta_set_lower_bound(a, unmapped, stream, 0, 0); i != TA_NIL && a->b[i].stream == stream;
         i = ta_set_next(a, i)) {
        uint32_t c = ta_allocatable(a, a->b[i].prev) ? a->b[i].prev : i;
        if (has_room(a, c, size))
            return c;
    }
    return new_segment(a, stream, pool);
}

/* Maps the pages under the first size bytes of unmapped block i; the rest
 * of i stays unmapped after it (map_block). False when the device has no
 * room for them. */
static bool map_block(struct cmt_ta_allocator *a, uint32_t i, uint64_t size)
{
    struct ta_es *e = es_of(a, i);
    uint64_t begin, end;
    page_cover(e, a->b[i].addr, size, &begin, &end);
    uint64_t bytes = (end - begin) * e->page;
    if (!bytes || a->st.reserved + bytes > a->limit || a->st.reserved + bytes < bytes)
        return false; /* cuMemCreate: out of memory */
    struct ta_pool *p = &a->pools[a->b[i].pool];
    ta_set_erase(a, &p->unmapped, i);
    a->b[i].flags |= TA_MAPPED;
    if (bytes < a->b[i].size) {
        struct ta_block *k = &a->b[i];
        uint32_t rest = ta_block_new(a, k->addr + bytes, k->size - bytes, k->stream, k->pool, k->es, k->cls, false);
        if (rest == TA_NIL)
            return false;
        /* i -> rest -> i's next */
        a->b[rest].prev = i;
        a->b[rest].next = a->b[i].next;
        if (a->b[i].next != TA_NIL)
            a->b[a->b[i].next].prev = rest;
        a->b[i].next = rest;
        a->b[i].size = bytes;
        ta_set_insert(a, &p->unmapped, rest);
    }
    ta_try_merge(a, i, a->b[i].prev);
    ta_try_merge(a, i, a->b[i].next);
    ta_cache_block(a, i);
    ta_reserve(a, CMT_TA_CLASS_EXPANDABLE, bytes, true);
    a->st.maps++;
    a->st.mapped_bytes += bytes;
    return true;
}

uint32_t ta_expandable_alloc(struct cmt_ta_allocator *a, uint64_t stream, uint16_t pool, uint64_t size)
{
    uint32_t c = find_room(a, stream, pool, size);
    if (c == TA_NIL)
        return TA_NIL;
    /* c is unmapped (then null or free after it), or free with unmapped
     * room after it */
    if (!(a->b[c].flags & TA_MAPPED)) {
        uint64_t want = a->b[c].size < size ? a->b[c].size : size;
        if (!map_block(a, c, want))
            return TA_NIL;
    }
    while (a->b[c].size < size) {
        uint32_t next = a->b[c].next;
        uint64_t rest = size - a->b[c].size;
        if (next == TA_NIL || !map_block(a, next, rest < a->b[next].size ? rest : a->b[next].size))
            return TA_NIL; /* what it mapped so far stays mapped and cached */
        c = next; /* it took c in (map_block merges with the free block before it) */
    }
    ta_set_erase(a, &a->pools[a->b[c].pool].blocks, c);
    return c;
}

void ta_expandable_unmap_block(struct cmt_ta_allocator *a, uint32_t i)
{
    struct ta_es *e = es_of(a, i);
    uint64_t begin, end;
    page_inside(e, a->b[i].addr, a->b[i].size, &begin, &end);
    if (begin >= end)
        return;
    uint64_t at = e->base + begin * e->page, bytes = (end - begin) * e->page;
    struct ta_pool *p = &a->pools[a->b[i].pool];
    ta_set_erase(a, &p->blocks, i);
    uint64_t before = at - a->b[i].addr, after = a->b[i].size - before - bytes;
    if (before) { /* prev -> front -> i, still mapped and cached */
        struct ta_block *k = &a->b[i];
        uint32_t f = ta_block_new(a, k->addr, before, k->stream, k->pool, k->es, k->cls, true);
        if (f == TA_NIL)
            return;
        a->b[f].prev = a->b[i].prev;
        a->b[f].next = i;
        if (a->b[i].prev != TA_NIL)
            a->b[a->b[i].prev].next = f;
        a->b[i].prev = f;
        ta_cache_block(a, f);
    }
    if (after) { /* i -> back -> next */
        struct ta_block *k = &a->b[i];
        uint32_t t = ta_block_new(a, at + bytes, after, k->stream, k->pool, k->es, k->cls, true);
        if (t == TA_NIL)
            return;
        a->b[t].prev = i;
        a->b[t].next = a->b[i].next;
        if (a->b[i].next != TA_NIL)
            a->b[a->b[i].next].prev = t;
        a->b[i].next = t;
        ta_cache_block(a, t);
    }
    a->b[i].addr = at;
    a->b[i].size = bytes;
    a->b[i].flags &= (uint8_t)~TA_MAPPED;
    ta_try_merge(a, i, a->b[i].prev);
    ta_try_merge(a, i, a->b[i].next);
    ta_set_insert(a, &p->unmapped, i);
    ta_reserve(a, CMT_TA_CLASS_EXPANDABLE, bytes, false);
    a->st.unmaps++;
    a->st.unmapped_bytes += bytes;
}

void ta_expandable_release(struct cmt_ta_allocator *a, uint32_t i)
{
    struct ta_es *e = es_of(a, i);
    if ((a->b[i].flags & TA_MAPPED) || a->b[i].size != e->pages * e->page)
        return; /* PyTorch asserts this cannot be */
    ta_set_erase(a, &a->pools[a->b[i].pool].unmapped, i);
    ta_range_remove(a, e->base);
    e->live = false;
    ta_block_delete(a, i);
}
