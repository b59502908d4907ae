/* SPDX-License-Identifier: MIT */
/* A request's way through the cache (DeviceCachingAllocator::malloc, free
 * and free_block in PyTorch 2.11): round it, pick its pool, take the best
 * cached fit, else a new segment, else free oversize blocks and retry, else
 * free everything unsplit and retry, else fail; split what is left over;
 * on release, join free neighbours. */
#include <stdlib.h>
#include <string.h>

#include "ta_internal.h"

/* Where made-up addresses start: cudaMalloc segments below the first,
 * expandable segments' ranges above the second (recorded addresses of
 * either kind land elsewhere on the H200: 0x7f.. and 0x3.. to 0x70..). */
#define SYNTH_CUDA_MALLOC_TOP 0x600000000000ull
#define SYNTH_EXPANDABLE_BASE 0x780000000000ull

/* ---- a request ------------------------------------------------------------------ */

struct request {
    uint64_t size, alloc_size, stream;
    uint16_t pool;
    bool expandable;
    uint32_t block;
    bool by_fraction;
};

static uint64_t expandable_size(const struct cmt_ta_allocator *a, uint32_t i)
{
    uint32_t n = a->b[i].next;
    return a->b[i].size + (n != TA_NIL && !(a->b[n].flags & TA_MAPPED) ? a->b[n].size : 0);
}

/* The best cached fit on the request's stream (get_free_block). */
static bool get_free_block(struct cmt_ta_allocator *a, struct request *r)
{
    struct ta_pool *p = &a->pools[r->pool];
    if (a->allowed != UINT64_MAX && a->s.garbage_collection_threshold > 0)
        p->gc_calls++;
    uint32_t it = ta_set_lower_bound(a, &p->blocks, r->stream, r->size, 0);
    if (it == TA_NIL || a->b[it].stream != r->stream)
        return false;
    if (a->b[it].es) {
        if (r->expandable) {
            /* a block before unmapped room counts at the size it can grow to */
            for (uint32_t next = ta_set_next(a, it); a->b[it].es && next != TA_NIL &&
                                                     a->b[next].stream == r->stream &&
                                                     expandable_size(a, next) < expandable_size(a, it);
                 next = ta_set_next(a, next))
                it = next;
        } else {
            do
                it = ta_set_next(a, it);
            while (it != TA_NIL && a->b[it].es && a->b[it].stream == r->stream);
            if (it == TA_NIL || a->b[it].stream != r->stream)
                return false;
        }
    }
    uint64_t max_split = a->s.max_split_size, size = a->b[it].size;
    if (r->size < max_split && size >= max_split)
        return false; /* an oversize block serves no smaller request */
    uint64_t slack = r->size + a->s.max_non_split_rounding_size;
    if (r->size >= max_split && slack >= r->size && size >= slack)
        return false; /* nor one far larger than an oversize request */
    ta_set_erase(a, &p->blocks, it);
    r->block = it;
    return true;
}

static uint8_t class_of(const struct cmt_ta_allocator *a, const struct request *r)
{
    if (a->pools[r->pool].is_small)
        return CMT_TA_CLASS_SMALL;
    return r->size < CMT_TA_MIN_LARGE_ALLOC ? CMT_TA_CLASS_LARGE : CMT_TA_CLASS_HUGE;
}

/* A new segment or new pages (alloc_block). */
static bool alloc_block(struct cmt_ta_allocator *a, struct request *r, bool retry)
{
    if (retry)
        a->st.retries++;
    if (a->allowed != UINT64_MAX && a->st.reserved + r->alloc_size > a->allowed) {
        r->by_fraction = true;
        return false;
    }
    r->block = r->expandable ? ta_expandable_alloc(a, r->stream, r->pool, r->size)
                             : ta_segment_alloc(a, r->alloc_size, r->stream, r->pool, class_of(a, r));
    return r->block != TA_NIL;
}

static bool should_split(const struct cmt_ta_allocator *a, const struct request *r)
{
    uint64_t rest = a->b[r->block].size - r->size;
    if (a->pools[r->pool].is_small || r->expandable)
        return rest >= CMT_TA_MIN_BLOCK;
    return r->size < a->s.max_split_size && rest > CMT_TA_SMALL_SIZE;
}

/* Hands the found block (its front, when the rest is split off) to the
 * tensor (alloc_found_block). */
static void alloc_found_block(struct cmt_ta_allocator *a, struct request *r, uint32_t slot, uint64_t requested)
{
    uint32_t i = r->block;
    if (should_split(a, r)) {
        struct ta_block *k = &a->b[i];
        uint32_t front = ta_block_new(a, k->addr, r->size, r->stream, r->pool, k->es, k->cls, true);
        if (front == TA_NIL) {
            ta_cache_block(a, i);
            return;
        }
        struct ta_block *rest = &a->b[i], *f = &a->b[front];
        f->prev = rest->prev;
        if (f->prev != TA_NIL)
            a->b[f->prev].next = front;
        f->next = i;
        rest->prev = front;
        rest->addr += r->size;
        rest->size -= r->size;
        ta_cache_block(a, i);
        i = front;
    }
    struct ta_block *k = &a->b[i];
    k->flags |= TA_ALLOCATED;
    k->requested = requested;
    k->slot = slot;
    a->slot_block[slot] = i;
    a->st.allocated += k->size;
    a->st.requested += requested;
    a->st.cls[k->cls].allocated += k->size;
    if (a->st.allocated > a->st.peak_allocated) {
        a->st.peak_allocated = a->st.allocated;
        a->st.peak_allocated_ts = a->now;
    }
}

/* Private pools a model keeps apart: a program makes a few (a CUDA graph,
 * a MemPool each); a trace naming more (a damaged or crafted one) has the
 * rest served from the default pools, so that finding one stays cheap. */
#define MAX_PRIVATE_POOLS 64

static uint16_t pool_of(struct cmt_ta_allocator *a, uint64_t rounded, uint64_t id0, uint64_t id1)
{
    bool small = cmt_ta_is_small(rounded);
    if (!id0 && !id1)
        return small ? 0 : 1;
    for (uint32_t i = 2; i + 1 < a->n_pools; i += 2)
        if (a->pools[i].id0 == id0 && a->pools[i].id1 == id1)
            return (uint16_t)(small ? i : i + 1);
    if (a->n_pools >= 2 + 2 * MAX_PRIVATE_POOLS)
        return small ? 0 : 1;
    if (a->n_pools + 2 > a->cap_pools) {
        uint32_t cap = 2 * a->cap_pools;
        struct ta_pool *p = realloc(a->pools, cap * sizeof *p);
        if (!p) {
            a->oom = true;
            return small ? 0 : 1;
        }
        a->pools = p;
        a->cap_pools = cap;
    }
    uint32_t i = a->n_pools;
    a->pools[i] = (struct ta_pool){.blocks = {TA_NIL, false}, .unmapped = {TA_NIL, true}, .is_small = true,
                                   .id0 = id0, .id1 = id1};
    a->pools[i + 1] = (struct ta_pool){.blocks = {TA_NIL, false}, .unmapped = {TA_NIL, true}, .is_small = false,
                                       .id0 = id0, .id1 = id1};
    a->n_pools += 2;
    return (uint16_t)(small ? i : i + 1);
}

static int slot_reserve(struct cmt_ta_allocator *a, uint32_t slot)
{
    if (slot < a->cap_slots)
        return 0;
    size_t cap = a->cap_slots ? a->cap_slots : 1024;
    while (cap <= slot)
        cap *= 2;
    uint32_t *s = realloc(a->slot_block, cap * sizeof *s);
    if (!s) {
        a->oom = true;
        return -1;
    }
    for (size_t i = a->cap_slots; i < cap; i++)
        s[i] = TA_NIL;
    a->slot_block = s;
    a->cap_slots = cap;
    return 0;
}

static void take_peak_snapshot(struct cmt_ta_allocator *a)
{
    if (!a->peak_pending)
        return;
    a->peak_pending = false;
    a->st.allocated_at_peak = a->st.allocated;
    memcpy(a->st.at_peak, a->st.cls, sizeof a->st.at_peak);
}

int cmt_ta_malloc(struct cmt_ta_allocator *a, uint32_t slot, uint64_t size, uint64_t stream, uint64_t pool_id0,
                  uint64_t pool_id1, struct cmt_ta_failure *f)
{
    if (a->oom || slot_reserve(a, slot) != 0)
        return -1;
    a->st.requests++;
    struct request r = {.stream = stream, .block = TA_NIL};
    r.size = cmt_ta_round_size(&a->s, size);
    r.pool = pool_of(a, r.size, pool_id0, pool_id1);
    r.alloc_size = cmt_ta_allocation_size(&a->s, r.size);
    r.expandable = a->s.expandable_segments;
    bool found = get_free_block(a, &r);
    if (found) {
        a->st.served_from_cache++;
    } else {
        if (a->allowed != UINT64_MAX && a->s.garbage_collection_threshold > 0)
            ta_garbage_collect(a);
        found = alloc_block(a, &r, false) ||
                (ta_release_available_cached_blocks(a, r.pool, r.stream, r.size) && alloc_block(a, &r, false));
        if (!found) {
            ta_release_cached_blocks(a, &a->st.released_for_retry_bytes);
            found = alloc_block(a, &r, true);
        }
    }
    if (a->oom)
        return -1;
    if (!found) {
        a->st.failures++;
        take_peak_snapshot(a);
        if (f) {
            uint64_t limit = a->limit < a->allowed ? a->limit : a->allowed;
            *f = (struct cmt_ta_failure){size, r.size, r.alloc_size, a->st.allocated, a->st.reserved, limit,
                                         r.by_fraction};
        }
        return 1;
    }
    alloc_found_block(a, &r, slot, size);
    take_peak_snapshot(a);
    return a->oom ? -1 : 0;
}

void cmt_ta_free_requested(struct cmt_ta_allocator *a, uint32_t slot)
{
    if (slot >= a->cap_slots || a->slot_block[slot] == TA_NIL)
        return;
    uint32_t i = a->slot_block[slot];
    struct ta_block *k = &a->b[i];
    if (!(k->flags & TA_ALLOCATED))
        return;
    k->flags = (uint8_t)((k->flags & ~TA_ALLOCATED) | TA_PENDING);
    a->st.allocated -= k->size;
    a->st.requested -= k->requested;
    a->st.cls[k->cls].allocated -= k->size;
    if (a->n_pending == a->cap_pending) {
        size_t cap = a->cap_pending ? 2 * a->cap_pending : 64;
        uint32_t *p = realloc(a->pending, cap * sizeof *p);
        if (!p) {
            a->oom = true;
            return;
        }
        a->pending = p;
        a->cap_pending = cap;
    }
    k->u.pending_at = (uint32_t)a->n_pending;
    a->pending[a->n_pending++] = i;
}

void cmt_ta_free_completed(struct cmt_ta_allocator *a, uint32_t slot)
{
    if (slot >= a->cap_slots || a->slot_block[slot] == TA_NIL)
        return;
    uint32_t i = a->slot_block[slot];
    if (a->b[i].flags & TA_ALLOCATED)
        cmt_ta_free_requested(a, slot); /* a completion with no request before it */
    a->slot_block[slot] = TA_NIL;
    if (!(a->b[i].flags & TA_PENDING))
        return;
    uint32_t at = a->b[i].u.pending_at, last = a->pending[--a->n_pending];
    a->pending[at] = last;
    a->b[last].u.pending_at = at;
    a->b[i].flags &= (uint8_t)~TA_PENDING;
    ta_free_block(a, i);
}

void cmt_ta_empty_cache(struct cmt_ta_allocator *a)
{
    a->st.empty_caches++;
    ta_release_cached_blocks(a, &a->st.empty_cache_released_bytes);
}

bool cmt_ta_slot_live(const struct cmt_ta_allocator *a, uint32_t slot)
{
    return slot < a->cap_slots && a->slot_block[slot] != TA_NIL;
}

/* ---- the allocator ---------------------------------------------------------- */

struct cmt_ta_allocator *cmt_ta_new(const struct cmt_ta_settings *s, uint64_t device_total)
{
    struct cmt_ta_allocator *a = calloc(1, sizeof *a);
    if (!a)
        return NULL;
    a->s = *s;
    /* sizes the expandable segments' ranges: a crafted size must not wrap */
    a->device_total = device_total < (1ull << 52) ? device_total : 1ull << 52;
    a->free_blocks = TA_NIL;
    a->limit = a->allowed = UINT64_MAX;
    a->synth_next = SYNTH_CUDA_MALLOC_TOP;
    a->es_next = SYNTH_EXPANDABLE_BASE;
    a->rng = 0x9e3779b97f4a7c15ull;
    a->cap_pools = 8;
    a->pools = calloc(a->cap_pools, sizeof *a->pools);
    if (!a->pools) {
        free(a);
        return NULL;
    }
    a->n_pools = 2;
    a->pools[0] = (struct ta_pool){.blocks = {TA_NIL, false}, .unmapped = {TA_NIL, true}, .is_small = true};
    a->pools[1] = (struct ta_pool){.blocks = {TA_NIL, false}, .unmapped = {TA_NIL, true}, .is_small = false};
    return a;
}

void cmt_ta_free_allocator(struct cmt_ta_allocator *a)
{
    if (!a)
        return;
    free(a->b);
    free(a->pools);
    free(a->es);
    free(a->slot_block);
    free(a->pending);
    free(a->ranges);
    free(a);
}

const struct cmt_ta_settings *cmt_ta_settings_of(const struct cmt_ta_allocator *a)
{
    return &a->s;
}

void cmt_ta_set_limit(struct cmt_ta_allocator *a, uint64_t limit)
{
    a->limit = limit;
}

void cmt_ta_set_allowed(struct cmt_ta_allocator *a, uint64_t allowed)
{
    a->allowed = allowed;
}

uint64_t cmt_ta_allowed(const struct cmt_ta_allocator *a)
{
    return a->allowed;
}

void cmt_ta_set_clock(struct cmt_ta_allocator *a, uint64_t ts)
{
    a->now = ts;
}

const struct cmt_ta_stats *cmt_ta_stats(const struct cmt_ta_allocator *a)
{
    return &a->st;
}

bool cmt_ta_out_of_memory(const struct cmt_ta_allocator *a)
{
    return a->oom;
}

const char *cmt_ta_class_name(enum cmt_ta_class c)
{
    static const char *const names[CMT_TA_CLASS_COUNT] = {
        "small (2 MiB segments)", "large (segments shared by requests under 10 MiB)",
        "huge (a segment per request of 10 MiB or more)", "expandable segments"};
    return c < CMT_TA_CLASS_COUNT ? names[c] : "?";
}

const char *cmt_ta_class_key(enum cmt_ta_class c)
{
    static const char *const keys[CMT_TA_CLASS_COUNT] = {"small", "large", "huge", "expandable"};
    return c < CMT_TA_CLASS_COUNT ? keys[c] : "?";
}
