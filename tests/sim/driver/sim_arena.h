/* SPDX-License-Identifier: MIT */
#ifndef SIMCUDA_ARENA_H
#define SIMCUDA_ARENA_H

#include <stdbool.h>
#include <stdint.h>

#include "sim_range.h"

/* Host address space standing in for one kind of memory (a device's memory,
 * managed memory, pinned host memory), with a first-fit allocator over it.
 *
 * The whole span is reserved up front (MAP_NORESERVE, at a fixed address when
 * free) but kept inaccessible beyond a high-water mark that grows, in 64 MiB
 * steps, as allocations reach further. Only memory that was ever handed out
 * is readable: a stray access above it faults as it would on a GPU, and
 * valgrind's leak scan reads megabytes rather than a 16 GiB device. */
struct sim_arena {
    struct sim_range range;
    uint64_t committed_end; /* [range.base, committed_end) is read-write */
};

/* False (after saying why on stderr) when the address space cannot be had. */
bool sim_arena_reserve(struct sim_arena *arena, uint64_t base, uint64_t size);

/* First fit, SIM_ALLOC_GRANULE aligned, made accessible. False when no hole
 * is large enough. */
bool sim_arena_alloc(struct sim_arena *arena, uint64_t size, uint64_t align, uint64_t *addr);

/* Returns a block; large ones also give their pages back to the OS, so a long
 * benchmark that touches big buffers does not grow without bound. */
void sim_arena_free(struct sim_arena *arena, uint64_t addr, uint64_t size);

/* True when [addr, addr + length) lies in the accessible part. */
bool sim_arena_contains(const struct sim_arena *arena, uint64_t addr, uint64_t length);

/* Reserves inaccessible address space at `base` if free, anywhere otherwise
 * (for VMM reservations, which cuMemMap makes accessible piece by piece).
 * NULL on failure. */
void *sim_reserve_address_space(uint64_t base, uint64_t size);

#endif
