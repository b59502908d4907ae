/* SPDX-License-Identifier: MIT */
/* Failed allocations of every kind the forensics tell apart, one scenario per
 * run (argv[1]), on a simulated device of 16 GiB with no context overhead
 * (tests/e2e/test_forensics.py sets SIMCUDA_*). Each prints what its calls
 * returned; the figures the report must show follow from the sizes here.
 *
 *   capacity       hold 12 GiB, ask for 6 GiB more
 *   fragmentation  sixteen 1 GiB blocks, free every other one, ask for 2 GiB
 *   caching        a pool that keeps 10 GiB it no longer uses (release
 *                  threshold unlimited), then a plain 8 GiB cudaMalloc; trim
 *                  the pool and the same request succeeds
 *   other          hold 2 GiB; another consumer takes 10 GiB; ask for 6 GiB
 *   retry          a cache holds four 3 GiB blocks, the program 2 GiB; 6 GiB
 *                  fails, the cache is released and the request retried
 *   waste          pitched and odd-sized allocations, size churn, and a
 *                  caching allocator's segments of many sizes
 *   periodic       five 1 MiB allocations 20 ms apart (device samples)
 *   torch_fragmentation
 *                  fragmentation as above, every allocation through a
 *                  caching allocator named like PyTorch's, which asks twice
 *   torch_capacity the same allocator holds 12 GiB and asks for 6 GiB more
 *                  (its cache could be what holds the memory)
 *   torch_too_large
 *                  the same allocator asks for 20 GiB: more than the device
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "simcuda.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

__attribute__((noinline)) static cudaError_t hold_data(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes);
}

__attribute__((noinline)) static cudaError_t ask_for_more(void **p, size_t bytes)
{
    return cudaMalloc(p, bytes);
}

__attribute__((noinline)) static cudaError_t fill_block(void **p)
{
    return cudaMalloc(p, GiB);
}

static int capacity(void)
{
    void *a = NULL, *b = NULL;
    cudaError_t r1 = hold_data(&a, 12 * GiB);
    cudaError_t r2 = ask_for_more(&b, 6 * GiB);
    printf("hold=%d ask=%d\n", r1, r2);
    cudaFree(a);
    return r2 == cudaErrorMemoryAllocation ? 0 : 1;
}

static int fragmentation(void)
{
    void *blocks[16];
    for (int i = 0; i < 16; i++)
        if (fill_block(&blocks[i]) != cudaSuccess)
            return 1;
    for (int i = 1; i < 16; i += 2)
        cudaFree(blocks[i]);
    void *big = NULL;
    cudaError_t r = ask_for_more(&big, 2 * GiB);
    printf("ask=%d\n", r);
    for (int i = 0; i < 16; i += 2)
        cudaFree(blocks[i]);
    return r == cudaErrorMemoryAllocation ? 0 : 1;
}

__attribute__((noinline)) static cudaError_t make_pool(cudaMemPool_t *pool)
{
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaError_t r = cudaMemPoolCreate(pool, &props);
    if (r != cudaSuccess)
        return r;
    uint64_t keep_everything = UINT64_MAX;
    return cudaMemPoolSetAttribute(*pool, cudaMemPoolAttrReleaseThreshold, &keep_everything);
}

__attribute__((noinline)) static cudaError_t use_pool(cudaMemPool_t pool, void **p, size_t bytes)
{
    return cudaMallocFromPoolAsync(p, bytes, pool, 0);
}

static int caching(void)
{
    cudaMemPool_t pool;
    void *scratch = NULL, *big = NULL;
    cudaError_t r1 = make_pool(&pool);
    cudaError_t r2 = use_pool(pool, &scratch, 10 * GiB);
    cudaFreeAsync(scratch, 0);
    cudaStreamSynchronize(0); /* the pool keeps its 10 GiB: threshold unlimited */
    cudaError_t r3 = ask_for_more(&big, 8 * GiB);
    cudaError_t r4 = cudaMemPoolTrimTo(pool, 0);
    cudaError_t r5 = ask_for_more(&big, 8 * GiB);
    printf("pool=%d use=%d ask=%d trim=%d ask_again=%d\n", r1, r2, r3, r4, r5);
    cudaFree(big);
    cudaMemPoolDestroy(pool);
    return r3 == cudaErrorMemoryAllocation && r5 == cudaSuccess ? 0 : 1;
}

static int other(void)
{
    void *a = NULL, *b = NULL;
    cudaError_t r1 = hold_data(&a, 2 * GiB);
    simcuda_set_external_used(0, 10 * GiB); /* another process starts */
    cudaError_t r2 = ask_for_more(&b, 6 * GiB);
    printf("hold=%d ask=%d\n", r1, r2);
    cudaFree(a);
    return r2 == cudaErrorMemoryAllocation ? 0 : 1;
}

/* A toy caching allocator: it keeps freed blocks and, when the device says
 * no, gives them all back and asks once more, as PyTorch's does. */
static void *cache[4];

__attribute__((noinline)) static cudaError_t cache_fill(void)
{
    for (int i = 0; i < 4; i++) {
        cudaError_t r = cudaMalloc(&cache[i], 3 * GiB);
        if (r != cudaSuccess)
            return r;
    }
    return cudaSuccess;
}

__attribute__((noinline)) static cudaError_t cached_malloc(void **p, size_t bytes)
{
    cudaError_t r = cudaMalloc(p, bytes);
    if (r != cudaErrorMemoryAllocation)
        return r;
    for (int i = 0; i < 4; i++)
        cudaFree(cache[i]);
    return cudaMalloc(p, bytes);
}

static int retry(void)
{
    void *a = NULL, *b = NULL;
    cudaError_t r1 = cache_fill();
    cudaError_t r2 = hold_data(&a, 2 * GiB);
    cudaError_t r3 = cached_malloc(&b, 6 * GiB);
    printf("cache=%d hold=%d cached_malloc=%d\n", r1, r2, r3);
    cudaFree(b);
    cudaFree(a);
    return r3 == cudaSuccess ? 0 : 1;
}

__attribute__((noinline)) static void pitched(void **p)
{
    size_t pitch = 0;
    cudaMallocPitch(p, &pitch, 1000, 10); /* pitch 1024: 24 bytes of padding per row */
}

__attribute__((noinline)) static void odd_size(void **p)
{
    cudaMalloc(p, 1000); /* 24 bytes to the next 512-byte step */
}

__attribute__((noinline)) static void churn_sizes(void)
{
    for (int i = 1; i <= 40; i++) {
        void *p;
        cudaMalloc(&p, (size_t)i * MiB);
        cudaFree(p);
    }
}

__attribute__((noinline)) static void same_size(void)
{
    for (int i = 0; i < 40; i++) {
        void *p;
        cudaMalloc(&p, 4 * MiB);
        cudaFree(p);
    }
}

__attribute__((noinline)) static void kept_sizes(void **kept)
{
    for (int i = 0; i < 5; i++)
        cudaMalloc(&kept[i], (size_t)(i + 1) * 2 * MiB);
}

/* Named like PyTorch's allocator (the report recognises it by its frames):
 * segments of the sizes callers ask for, kept, as a caching allocator keeps
 * them. Two callers, six sizes each: one churn row for the allocator. */
__attribute__((noinline)) static void *fake_CUDACachingAllocator_malloc(size_t bytes)
{
    void *p = NULL;
    cudaMalloc(&p, bytes);
    return p;
}

__attribute__((noinline)) static void forward_pass(void)
{
    for (int i = 1; i <= 6; i++)
        fake_CUDACachingAllocator_malloc((size_t)i * 3 * MiB);
}

__attribute__((noinline)) static void backward_pass(void)
{
    for (int i = 1; i <= 6; i++)
        fake_CUDACachingAllocator_malloc((size_t)i * 5 * MiB + MiB);
}

static int waste(void)
{
    void *p = NULL, *q = NULL, *kept[5];
    kept_sizes(kept); /* long-lived: released only at the end, like a program's teardown */
    pitched(&p);
    odd_size(&q);
    churn_sizes();
    same_size();
    forward_pass();
    backward_pass();
    for (int i = 0; i < 5; i++)
        cudaFree(kept[i]);
    cudaFree(q);
    cudaFree(p);
    printf("waste done\n");
    return 0;
}

static int periodic(void)
{
    void *p[5];
    for (int i = 0; i < 5; i++) {
        if (i) {
            struct timespec pause = {0, 20 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        if (cudaMalloc(&p[i], MiB) != cudaSuccess)
            return 1;
    }
    for (int i = 0; i < 5; i++)
        cudaFree(p[i]);
    printf("periodic done\n");
    return 0;
}

/* Named like PyTorch's allocator: when the device says no, it releases the
 * blocks it caches (none here) and asks once more; a second no is PyTorch's
 * "CUDA out of memory". */
__attribute__((noinline)) static cudaError_t fake_CUDACachingAllocator_alloc(void **p, size_t bytes)
{
    cudaError_t r = cudaMalloc(p, bytes);
    if (r != cudaErrorMemoryAllocation)
        return r;
    return cudaMalloc(p, bytes);
}

static int torch_fragmentation(void)
{
    void *blocks[16];
    for (int i = 0; i < 16; i++)
        if (fake_CUDACachingAllocator_alloc(&blocks[i], GiB) != cudaSuccess)
            return 1;
    for (int i = 1; i < 16; i += 2)
        cudaFree(blocks[i]);
    void *big = NULL;
    cudaError_t r = fake_CUDACachingAllocator_alloc(&big, 2 * GiB);
    printf("ask=%d\n", r);
    for (int i = 0; i < 16; i += 2)
        cudaFree(blocks[i]);
    return r == cudaErrorMemoryAllocation ? 0 : 1;
}

static int torch_capacity(void)
{
    void *data = NULL, *more = NULL;
    cudaError_t h = fake_CUDACachingAllocator_alloc(&data, 12 * GiB);
    cudaError_t a = fake_CUDACachingAllocator_alloc(&more, 6 * GiB);
    printf("hold=%d ask=%d\n", h, a);
    cudaFree(data);
    return h == cudaSuccess && a == cudaErrorMemoryAllocation ? 0 : 1;
}

static int torch_too_large(void)
{
    void *big = NULL;
    cudaError_t a = fake_CUDACachingAllocator_alloc(&big, 20 * GiB);
    printf("ask=%d\n", a);
    return a == cudaErrorMemoryAllocation ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: oom_scenarios capacity|fragmentation|caching|other|retry|waste|periodic|torch_fragmentation|torch_capacity|torch_too_large\n");
        return 2;
    }
    const char *s = argv[1];
    if (!strcmp(s, "capacity"))
        return capacity();
    if (!strcmp(s, "fragmentation"))
        return fragmentation();
    if (!strcmp(s, "caching"))
        return caching();
    if (!strcmp(s, "other"))
        return other();
    if (!strcmp(s, "retry"))
        return retry();
    if (!strcmp(s, "waste"))
        return waste();
    if (!strcmp(s, "periodic"))
        return periodic();
    if (!strcmp(s, "torch_fragmentation"))
        return torch_fragmentation();
    if (!strcmp(s, "torch_capacity"))
        return torch_capacity();
    if (!strcmp(s, "torch_too_large"))
        return torch_too_large();
    fprintf(stderr, "oom_scenarios: unknown scenario %s\n", s);
    return 2;
}
