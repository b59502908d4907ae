/* SPDX-License-Identifier: MIT */
#include "sim_range.h"
#include "sim_work.h"

#include <stdlib.h>
#include <string.h>

bool sim_range_init(struct sim_range *range, uint64_t base, uint64_t size)
{
    memset(range, 0, sizeof *range);
    range->base = base;
    range->size = size;
    range->hole_capacity = 8;
    range->holes = malloc(range->hole_capacity * sizeof *range->holes);
    if (!range->holes)
        return false;
    range->holes[0] = (struct sim_hole){base, size};
    range->hole_count = 1;
    return true;
}

void sim_range_destroy(struct sim_range *range)
{
    free(range->holes);
    memset(range, 0, sizeof *range);
}

/* One more block may exist after the caller's allocation, hence one more hole. */
static bool reserve_hole_slots(struct sim_range *range)
{
    size_t needed = range->block_count + 2;
    if (range->hole_capacity >= needed)
        return true;
    size_t capacity = range->hole_capacity * 2;
    while (capacity < needed)
        capacity *= 2;
    struct sim_hole *holes = realloc(range->holes, capacity * sizeof *holes);
    if (!holes)
        return false;
    range->holes = holes;
    range->hole_capacity = capacity;
    return true;
}

static void remove_hole(struct sim_range *range, size_t index)
{
    sim_work(range->hole_count - index);
    memmove(&range->holes[index], &range->holes[index + 1],
            (range->hole_count - index - 1) * sizeof *range->holes);
    range->hole_count--;
}

static void insert_hole(struct sim_range *range, size_t index, uint64_t start, uint64_t size)
{
    sim_work(range->hole_count - index + 1);
    memmove(&range->holes[index + 1], &range->holes[index],
            (range->hole_count - index) * sizeof *range->holes);
    range->holes[index] = (struct sim_hole){start, size};
    range->hole_count++;
}

/* Carves [start, start + size) out of hole `index`, which contains it. */
static void carve(struct sim_range *range, size_t index, uint64_t start, uint64_t size)
{
    struct sim_hole *hole = &range->holes[index];
    uint64_t before = start - hole->start;
    uint64_t after = hole->start + hole->size - (start + size);
    if (before == 0 && after == 0) {
        remove_hole(range, index);
    } else if (before == 0) {
        hole->start += size;
        hole->size -= size;
    } else if (after == 0) {
        hole->size = before;
    } else {
        hole->size = before;
        insert_hole(range, index + 1, start + size, after);
    }
    range->used += size;
    range->block_count++;
}

bool sim_range_alloc(struct sim_range *range, uint64_t size, uint64_t align, uint64_t *addr)
{
    if (size == 0 || !reserve_hole_slots(range))
        return false;
    for (size_t i = 0; i < range->hole_count; i++) {
        sim_work(1);
        const struct sim_hole *hole = &range->holes[i];
        uint64_t start = (hole->start + align - 1) & ~(align - 1);
        uint64_t padding = start - hole->start;
        if (padding > hole->size || hole->size - padding < size)
            continue;
        carve(range, i, start, size);
        *addr = start;
        return true;
    }
    return false;
}

bool sim_range_alloc_at(struct sim_range *range, uint64_t addr, uint64_t size)
{
    if (size == 0 || !reserve_hole_slots(range))
        return false;
    for (size_t i = 0; i < range->hole_count; i++) {
        sim_work(1);
        const struct sim_hole *hole = &range->holes[i];
        if (hole->start > addr)
            break;
        if (addr - hole->start <= hole->size && hole->size - (addr - hole->start) >= size) {
            carve(range, i, addr, size);
            return true;
        }
    }
    return false;
}

/* Index of the first hole starting above addr (binary search). */
static size_t first_hole_above(const struct sim_range *range, uint64_t addr)
{
    size_t lo = 0, hi = range->hole_count;
    while (lo < hi) {
        sim_work(1);
        size_t mid = lo + (hi - lo) / 2;
        if (range->holes[mid].start > addr)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void sim_range_free(struct sim_range *range, uint64_t addr, uint64_t size)
{
    size_t next = first_hole_above(range, addr);
    bool joins_prev = next > 0 && range->holes[next - 1].start + range->holes[next - 1].size == addr;
    bool joins_next = next < range->hole_count && addr + size == range->holes[next].start;
    if (joins_prev && joins_next) {
        range->holes[next - 1].size += size + range->holes[next].size;
        remove_hole(range, next);
    } else if (joins_prev) {
        range->holes[next - 1].size += size;
    } else if (joins_next) {
        range->holes[next].start = addr;
        range->holes[next].size += size;
    } else {
        insert_hole(range, next, addr, size);
    }
    range->used -= size;
    range->block_count--;
}

uint64_t sim_range_largest_hole(const struct sim_range *range)
{
    uint64_t largest = 0;
    sim_work(range->hole_count);
    for (size_t i = 0; i < range->hole_count; i++)
        if (range->holes[i].size > largest)
            largest = range->holes[i].size;
    return largest;
}
