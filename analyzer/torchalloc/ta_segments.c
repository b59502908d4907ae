/* SPDX-License-Identifier: MIT */
/* Segments the cache takes with cudaMalloc (alloc_block's plain path) and
 * gives back with cudaFree (release_block), and the addresses they get.
 *
 * Addresses only order cached blocks of equal size (best fit takes the
 * lowest), yet that order decides which segment a request splits. The
 * driver's choice cannot be derived (on the H200 64 MiB segments came
 * 0x7f695a000000, 0x7f6956000000, then 0x7f6bee000000 and down), so a new
 * segment takes the address the recorded run's next unused segment of its
 * size had, which replays the recorded settings exactly, and otherwise one
 * below every address handed out so far, as the driver mostly did. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ta_internal.h"

#define ALIGN (2ull << 20)

static size_t range_lower(const struct cmt_ta_allocator *a, uint64_t addr)
{
    size_t lo = 0, hi = a->n_ranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (a->ranges[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The index of a live range overlapping [addr, addr + size), or SIZE_MAX. */
static size_t overlap_at(const struct cmt_ta_allocator *a, uint64_t addr, uint64_t size)
{
    size_t i = range_lower(a, addr);
    if (i < a->n_ranges && a->ranges[i].addr < addr + size)
        return i;
    if (i > 0 && a->ranges[i - 1].addr + a->ranges[i - 1].size > addr)
        return i - 1;
    return SIZE_MAX;
}

bool ta_range_overlaps(const struct cmt_ta_allocator *a, uint64_t addr, uint64_t size)
{
    return overlap_at(a, addr, size) != SIZE_MAX;
}

int ta_range_add(struct cmt_ta_allocator *a, uint64_t addr, uint64_t size)
{
    if (a->n_ranges == a->cap_ranges) {
        size_t cap = a->cap_ranges ? 2 * a->cap_ranges : 64;
        struct ta_range *r = realloc(a->ranges, cap * sizeof *r);
        if (!r) {
            a->oom = true;
            return -1;
        }
        a->ranges = r;
        a->cap_ranges = cap;
    }
    size_t i = range_lower(a, addr);
    memmove(&a->ranges[i + 1], &a->ranges[i], (a->n_ranges - i) * sizeof *a->ranges);
    a->ranges[i] = (struct ta_range){addr, size};
    a->n_ranges++;
    return 0;
}

void ta_range_remove(struct cmt_ta_allocator *a, uint64_t addr)
{
    size_t i = range_lower(a, addr);
    if (i == a->n_ranges || a->ranges[i].addr != addr)
        return;
    memmove(&a->ranges[i], &a->ranges[i + 1], (a->n_ranges - i - 1) * sizeof *a->ranges);
    a->n_ranges--;
}

void cmt_ta_address_hint(struct cmt_ta_allocator *a, uint64_t addr, uint64_t size)
{
    if (!addr || !size || addr + size < addr)
        return; /* no segment's range */
    if (a->n_hints == TA_HINTS) { /* the oldest was never wanted */
        memmove(&a->hints[0], &a->hints[1], (TA_HINTS - 1) * sizeof a->hints[0]);
        a->n_hints--;
    }
    a->hints[a->n_hints++] = (struct ta_range){addr, size};
}

static uint64_t choose_address(struct cmt_ta_allocator *a, uint64_t size)
{
    for (size_t i = 0; i < a->n_hints; i++) {
        struct ta_range h = a->hints[i];
        if (h.size != size)
            continue;
        memmove(&a->hints[i], &a->hints[i + 1], (a->n_hints - i - 1) * sizeof a->hints[0]);
        a->n_hints--;
        if (!ta_range_overlaps(a, h.addr, size))
            return h.addr;
        break; /* its place is taken in this replay: make one up */
    }
    uint64_t rounded = size < UINT64_MAX - ALIGN ? (size + ALIGN - 1) & ~(ALIGN - 1) : size;
    uint64_t addr = a->synth_next > rounded ? a->synth_next - rounded : 0;
    /* below a recorded address taken earlier; each step passes one range */
    for (size_t j, steps = 0; addr && (j = overlap_at(a, addr, rounded)) != SIZE_MAX && steps <= a->n_ranges; steps++)
        addr = a->ranges[j].addr > rounded ? (a->ranges[j].addr - rounded) & ~(ALIGN - 1) : 0;
    if (!addr) /* the made-up range ran out (crafted sizes): any address orders as well */
        addr = ALIGN;
    a->synth_next = addr;
    return addr;
}

uint32_t ta_segment_alloc(struct cmt_ta_allocator *a, uint64_t size, uint64_t stream, uint16_t pool, uint8_t cls)
{
    if (a->st.reserved + size > a->limit || a->st.reserved + size < size)
        return TA_NIL; /* cudaMalloc: out of memory */
    uint64_t addr = choose_address(a, size);
    if (ta_range_add(a, addr, size) != 0)
        return TA_NIL;
    uint32_t i = ta_block_new(a, addr, size, stream, pool, 0, cls, true);
    if (i == TA_NIL) {
        ta_range_remove(a, addr);
        return TA_NIL;
    }
    a->st.segments_made++;
    ta_reserve(a, cls, size, true);
    return i;
}

void ta_segment_release(struct cmt_ta_allocator *a, uint32_t i)
{
    struct ta_block *k = &a->b[i];
    ta_set_erase(a, &a->pools[k->pool].blocks, i);
    ta_range_remove(a, k->addr);
    ta_reserve(a, k->cls, k->size, false);
    a->st.segments_released++;
    ta_block_delete(a, i);
}
