/* SPDX-License-Identifier: MIT */
/* What the cache gives back to the device: oversize blocks before a retry
 * (release_available_cached_blocks), everything unsplit and every free page
 * (release_cached_blocks: the last try before an out-of-memory error, and
 * empty_cache), and old blocks under a memory fraction
 * (garbage_collect_cached_blocks). */
#include <stdlib.h>

#include "ta_internal.h"

static void release_segment(struct cmt_ta_allocator *a, uint32_t i, uint64_t *released)
{
    *released += a->b[i].size;
    ta_segment_release(a, i);
}

/* Frees cached blocks of at least max_split_size on the request's stream:
 * the smallest that is as large as the request (or max_split_size), else
 * the largest ones until as much is freed. */
bool ta_release_available_cached_blocks(struct cmt_ta_allocator *a, uint16_t pool, uint64_t stream, uint64_t size)
{
    uint64_t max_split = a->s.max_split_size;
    if (max_split == UINT64_MAX)
        return false;
    struct ta_set *set = &a->pools[pool].blocks;
    uint64_t want = size < max_split ? max_split : size;
    uint32_t it = ta_set_lower_bound(a, set, stream, want, 0);
    if (it != TA_NIL && a->b[it].stream == stream && !a->b[it].es) {
        if (ta_is_split(a, it))
            return false; /* PyTorch would cudaFree inside a segment; its blocks this size are whole */
        release_segment(a, it, &a->st.released_for_retry_bytes);
        return true;
    }
    uint32_t first = ta_set_first(a, set);
    if (it == first)
        return false;
    it = it == TA_NIL ? ta_set_last(a, set) : ta_set_prev(a, it);
    uint64_t total = 0;
    while (total < want && a->b[it].size >= max_split && a->b[it].stream == stream) {
        uint32_t cur = it;
        bool is_first = cur == ta_set_first(a, set);
        if (!is_first)
            it = ta_set_prev(a, it);
        if (!a->b[cur].es && !ta_is_split(a, cur)) {
            total += a->b[cur].size;
            release_segment(a, cur, &a->st.released_for_retry_bytes);
        }
        if (is_first)
            break;
    }
    return total >= want;
}

/* Every pending release completes (synchronize_and_free_events). */
static void settle_pending(struct cmt_ta_allocator *a)
{
    while (a->n_pending) {
        uint32_t i = a->pending[a->n_pending - 1];
        a->n_pending--;
        a->b[i].flags &= (uint8_t)~TA_PENDING;
        a->slot_block[a->b[i].slot] = TA_NIL; /* its FREE_COMPLETED comes later and finds nothing */
        ta_free_block(a, i);
    }
}

static void release_pool(struct cmt_ta_allocator *a, struct ta_pool *p, uint64_t *released)
{
    uint32_t *unmap = NULL;
    size_t n = 0, cap = 0;
    for (uint32_t it = ta_set_first(a, &p->blocks); it != TA_NIL;) {
        uint32_t i = it;
        it = ta_set_next(a, it);
        if (a->b[i].es) {
            if (n == cap) { /* unmapping changes the set: collect first */
                size_t c = cap ? 2 * cap : 16;
                uint32_t *u = realloc(unmap, c * sizeof *u);
                if (!u) {
                    a->oom = true;
                    break;
                }
                unmap = u;
                cap = c;
            }
            unmap[n++] = i;
        } else if (!ta_is_split(a, i)) {
            release_segment(a, i, released);
        }
    }
    for (size_t k = 0; k < n; k++) {
        uint32_t i = unmap[k];
        uint64_t before = a->st.unmapped_bytes;
        ta_expandable_unmap_block(a, i);
        *released += a->st.unmapped_bytes - before;
        if (!ta_is_split(a, i))
            ta_expandable_release(a, i);
    }
    free(unmap);
}

void ta_release_cached_blocks(struct cmt_ta_allocator *a, uint64_t *released)
{
    settle_pending(a);
    /* The default pools only: a private pool's memory goes back when its
     * graphs are destroyed, which the trace does not say. */
    release_pool(a, &a->pools[1], released);
    release_pool(a, &a->pools[0], released);
}

static uint64_t age(const struct cmt_ta_allocator *a, uint32_t i)
{
    /* PyTorch narrows the count to an int and back */
    return (uint64_t)(int)(a->pools[a->b[i].pool].gc_calls - a->b[i].gc_base);
}

/* Frees unsplit large blocks older than the average until the reserve is
 * below garbage_collection_threshold of the fraction's limit. */
void ta_garbage_collect(struct cmt_ta_allocator *a)
{
    uint64_t threshold = (uint64_t)(a->s.garbage_collection_threshold * (double)a->allowed);
    if (a->st.reserved <= threshold)
        return;
    uint64_t target = a->st.reserved - threshold, reclaimed = 0, total_age = 0;
    uint64_t count = 0;
    struct ta_set *large = &a->pools[1].blocks;
    for (uint32_t i = ta_set_first(a, large); i != TA_NIL; i = ta_set_next(a, i))
        if (!ta_is_split(a, i)) {
            total_age += age(a, i);
            count++;
        }
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        double threshold_age = (double)total_age / (double)count;
        freed = false;
        for (uint32_t it = ta_set_first(a, large); it != TA_NIL;) {
            uint32_t i = it;
            it = ta_set_next(a, it);
            if (ta_is_split(a, i) || a->b[i].es || (double)age(a, i) < threshold_age)
                continue;
            freed = true;
            reclaimed += a->b[i].size;
            total_age -= age(a, i);
            count--;
            release_segment(a, i, &a->st.gc_released_bytes);
        }
    }
}
