/* SPDX-License-Identifier: MIT */
#include "sim_arena.h"

#include <stdio.h>
#include <sys/mman.h>

#define COMMIT_STEP (64ull << 20)
#define RETURN_PAGES_FROM (4ull << 20)

void *sim_reserve_address_space(uint64_t base, uint64_t size)
{
    /* MAP_NORESERVE: untouched pages cost nothing, so a 16 GiB device is cheap. */
    int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void *p = mmap((void *)(uintptr_t)base, size, PROT_NONE, flags | MAP_FIXED_NOREPLACE, -1, 0);
    if (p != MAP_FAILED && (uint64_t)(uintptr_t)p == base)
        return p;
    if (p != MAP_FAILED) /* kernels before 4.17 treat the flag as a mere hint */
        munmap(p, size);
    p = mmap(NULL, size, PROT_NONE, flags, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "simcuda: cannot reserve %llu bytes of address space\n", (unsigned long long)size);
        return NULL;
    }
    fprintf(stderr, "simcuda: address 0x%llx is taken; using %p, pointers will not be deterministic\n",
            (unsigned long long)base, p);
    return p;
}

bool sim_arena_reserve(struct sim_arena *arena, uint64_t base, uint64_t size)
{
    void *p = sim_reserve_address_space(base, size);
    if (!p || !sim_range_init(&arena->range, (uint64_t)(uintptr_t)p, size))
        return false;
    arena->committed_end = arena->range.base;
    return true;
}

/* Makes the arena accessible up to at least `end`. */
static bool commit_to(struct sim_arena *arena, uint64_t end)
{
    if (end <= arena->committed_end)
        return true;
    uint64_t limit = arena->range.base + arena->range.size;
    uint64_t target = arena->range.base + (end - arena->range.base + COMMIT_STEP - 1) / COMMIT_STEP * COMMIT_STEP;
    if (target > limit)
        target = limit;
    if (mprotect((void *)(uintptr_t)arena->committed_end, target - arena->committed_end, PROT_READ | PROT_WRITE) != 0)
        return false;
    arena->committed_end = target;
    return true;
}

bool sim_arena_alloc(struct sim_arena *arena, uint64_t size, uint64_t align, uint64_t *addr)
{
    if (!sim_range_alloc(&arena->range, size, align, addr))
        return false;
    if (!commit_to(arena, *addr + size)) {
        sim_range_free(&arena->range, *addr, size);
        return false;
    }
    return true;
}

void sim_arena_free(struct sim_arena *arena, uint64_t addr, uint64_t size)
{
    sim_range_free(&arena->range, addr, size);
    if (size >= RETURN_PAGES_FROM)
        madvise((void *)(uintptr_t)addr, size, MADV_DONTNEED);
}

bool sim_arena_contains(const struct sim_arena *arena, uint64_t addr, uint64_t length)
{
    uint64_t base = arena->range.base;
    return addr >= base && addr <= arena->committed_end && arena->committed_end - addr >= length;
}
