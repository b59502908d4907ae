/* SPDX-License-Identifier: MIT */
#include "arena.h"

#include <stdint.h>
#include <sys/mman.h>

#define ARENA_BLOCK (1u << 20)

static uint8_t *arena_pos;
static uint8_t *arena_end;

void *cmt_arena_alloc_pages(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void *cmt_arena_alloc(size_t size)
{
    size = (size + 15) & ~(size_t)15;
    if (size > ARENA_BLOCK / 4)
        return cmt_arena_alloc_pages(size);
    if (!arena_pos || (size_t)(arena_end - arena_pos) < size) {
        uint8_t *block = cmt_arena_alloc_pages(ARENA_BLOCK);
        if (!block)
            return NULL;
        arena_pos = block;
        arena_end = block + ARENA_BLOCK;
    }
    void *p = arena_pos;
    arena_pos += size;
    return p;
}
