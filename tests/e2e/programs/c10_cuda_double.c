/* SPDX-License-Identifier: MIT */
/* A test double of PyTorch's CUDA caching allocator, built as libc10_cuda.so
 * with the C++ names of c10's (asm labels: the symbol table is all the
 * analyzer reads, as for the real library, which ships without DWARF). Only
 * the shape the analyzer relies on: segments reserved with cudaMalloc by
 * DeviceCachingAllocator::alloc_block, tensors handed out as sub-blocks of
 * them, freed blocks kept in the cache, segments kept until exit unless
 * emptyCache releases those with no block in use. With
 * PYTORCH_NO_CUDA_MEMORY_CACHING set, NativeCachingAllocator::allocate calls
 * cudaMalloc per tensor and free calls cudaFree, as PyTorch does.
 *
 * Segments: the request rounded up to 2 MiB (at least 2 MiB); blocks: the
 * request rounded up to 512 B, carved from a segment with room, first fit by
 * a bump pointer that returns to 0 when the segment's last block is freed. */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

#define SEGMENT_ROUND (2u << 20)
#define BLOCK_ROUND 512u
#define MAX_SEGMENTS 64
#define MAX_BLOCKS 256

struct segment {
    char *base;
    size_t size, used;
    unsigned live_blocks;
};

struct block {
    char *ptr;
    int segment; /* -1: a cudaMalloc of its own (no caching) */
};

static struct segment segments[MAX_SEGMENTS];
static struct block blocks[MAX_BLOCKS];

#define API __attribute__((visibility("default"), noinline))

API void *alloc_block(size_t size) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator11alloc_blockEm");
API void *device_malloc(size_t size) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEm");
API void release_cached_blocks(void) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator21release_cached_blocksEv");
API void *native_allocate(size_t size) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator8allocateEm");
API void native_empty_cache(void) __asm__("_ZN3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocator10emptyCacheEv");
API void c10_double_free(void *p);

static int no_caching(void)
{
    const char *v = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    return v && *v && *v != '0';
}

static void remember(char *p, int segment)
{
    for (int i = 0; i < MAX_BLOCKS; i++)
        if (!blocks[i].ptr) {
            blocks[i] = (struct block){p, segment};
            return;
        }
}

/* Reserves a new segment for size bytes: index, or -1. */
void *alloc_block(size_t size)
{
    size_t seg = (size + SEGMENT_ROUND - 1) / SEGMENT_ROUND * SEGMENT_ROUND;
    if (seg == 0)
        seg = SEGMENT_ROUND;
    for (int i = 0; i < MAX_SEGMENTS; i++) {
        if (segments[i].base)
            continue;
        void *p = NULL;
        if (cudaMalloc(&p, seg) != cudaSuccess)
            return NULL;
        segments[i] = (struct segment){p, seg, 0, 0};
        return &segments[i];
    }
    return NULL;
}

void *device_malloc(size_t size)
{
    size_t need = (size + BLOCK_ROUND - 1) / BLOCK_ROUND * BLOCK_ROUND;
    struct segment *s = NULL;
    for (int i = 0; i < MAX_SEGMENTS && !s; i++)
        if (segments[i].base && segments[i].size - segments[i].used >= need)
            s = &segments[i];
    if (!s)
        s = alloc_block(need);
    if (!s)
        return NULL;
    char *p = s->base + s->used;
    s->used += need;
    s->live_blocks++;
    remember(p, (int)(s - segments));
    return p;
}

void *native_allocate(size_t size)
{
    if (no_caching()) {
        void *p = NULL;
        if (cudaMalloc(&p, size) != cudaSuccess)
            return NULL;
        remember(p, -1);
        return p;
    }
    return device_malloc(size);
}

void c10_double_free(void *p)
{
    for (int i = 0; i < MAX_BLOCKS; i++) {
        if (blocks[i].ptr != p)
            continue;
        int seg = blocks[i].segment;
        blocks[i].ptr = NULL;
        if (seg < 0) {
            cudaFree(p);
        } else if (--segments[seg].live_blocks == 0) {
            segments[seg].used = 0; /* cached: the segment stays reserved */
        }
        return;
    }
}

void release_cached_blocks(void)
{
    for (int i = 0; i < MAX_SEGMENTS; i++)
        if (segments[i].base && segments[i].live_blocks == 0) {
            cudaFree(segments[i].base);
            segments[i] = (struct segment){0};
        }
}

void native_empty_cache(void)
{
    release_cached_blocks();
}
