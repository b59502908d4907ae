/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_RANGE_H
#define SIMCUDA_RANGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An address-ordered first-fit allocator over one contiguous address range.
 * It hands out addresses only; it never touches the memory it manages, so
 * the same code serves a device's memory, a pool segment, the managed and
 * pinned host arenas and the VMM address space.
 *
 * Free space is a sorted array of holes that are never adjacent (freeing
 * coalesces with both neighbours). Because holes and blocks alternate, there
 * are at most blocks + 1 holes; sim_range_alloc keeps the array that large, so
 * sim_range_free never allocates and cannot fail. */

struct sim_hole {
    uint64_t start;
    uint64_t size;
};

struct sim_range {
    uint64_t base;
    uint64_t size;
    uint64_t used;        /* bytes in live blocks */
    size_t block_count;   /* live blocks */
    struct sim_hole *holes;
    size_t hole_count;
    size_t hole_capacity;
};

/* Returns false when the bookkeeping array cannot be allocated. */
bool sim_range_init(struct sim_range *range, uint64_t base, uint64_t size);
void sim_range_destroy(struct sim_range *range);

/* Lowest-addressed placement of `size` bytes at a multiple of `align` (a power
 * of two). Returns false when no hole is large enough (or, rarely, when the
 * hole array cannot grow). */
bool sim_range_alloc(struct sim_range *range, uint64_t size, uint64_t align, uint64_t *addr);

/* Takes exactly [addr, addr + size) if that span lies wholly inside one hole. */
bool sim_range_alloc_at(struct sim_range *range, uint64_t addr, uint64_t size);

/* Returns [addr, addr + size), which must be a block handed out before. */
void sim_range_free(struct sim_range *range, uint64_t addr, uint64_t size);

uint64_t sim_range_largest_hole(const struct sim_range *range);

#endif
