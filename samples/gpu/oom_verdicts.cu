// SPDX-License-Identifier: MIT
// Failed allocations of each verdict on a real GPU (docs/fragmentation.md),
// one scenario per run, sizes relative to what cudaMemGetInfo reports at the
// start. samples/gpu/run_frag_validation.sh runs them under the shim and
// checks the report's verdicts. Built with plain nvcc (static runtime): the
// shim catches the driver calls underneath (cuMemAlloc, cuMemPoolCreate...).
//
//   oom_verdicts capacity_large   ask for more than the device has
//   oom_verdicts capacity_live    hold 60% of the free memory, ask for 60% more
//   oom_verdicts fragmentation    1 GiB blocks until full, free every other one,
//                                 ask for 2 GiB, then for half of what is free
//   oom_verdicts caching          a pool keeps 70% of the free memory it no
//                                 longer uses (release threshold unlimited);
//                                 cudaMalloc of 50%; trim; ask again
//   oom_verdicts other            hold 2 GiB; ask for 1 GiB more than is free
//                                 (run while `oom_verdicts hold` holds memory)
//   oom_verdicts retry            a toy caching allocator: cache 4 x 20%, hold
//                                 10%, ask 30%, release the cache, ask again
//   oom_verdicts hold FRACTION SECONDS READYFILE
//                                 (untraced) take FRACTION of the free memory,
//                                 create READYFILE, sleep SECONDS
//
// Each prints "scenario: key=value ..." lines: the CUDA results of its calls.
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const size_t GiB = 1ull << 30;

static size_t free_now(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return f;
}

static size_t total_bytes(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return t;
}

static size_t round_gib(double bytes)
{
    return (size_t)(bytes / (double)GiB) * GiB;
}

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

static int capacity_large(void)
{
    void *p = NULL;
    cudaError_t r = ask_for_more(&p, total_bytes() + GiB);
    printf("capacity_large: total=%zu ask=%d\n", total_bytes(), r);
    cudaGetLastError();
    return 0;
}

static int capacity_live(void)
{
    size_t f = free_now();
    void *a = NULL, *b = NULL;
    cudaError_t r1 = hold_data(&a, round_gib(f * 0.6));
    cudaError_t r2 = ask_for_more(&b, round_gib(f * 0.6));
    printf("capacity_live: free=%zu hold=%d ask=%d\n", f, r1, r2);
    cudaGetLastError();
    cudaFree(a);
    cudaFree(b);
    return 0;
}

static int fragmentation(void)
{
    static void *blocks[512];
    int n = 0;
    while (n < 512 && free_now() > 2 * GiB && fill_block(&blocks[n]) == cudaSuccess)
        n++;
    cudaGetLastError();
    for (int i = 1; i < n; i += 2)
        cudaFree(blocks[i]);
    size_t f = free_now();
    void *big = NULL, *half = NULL;
    cudaError_t r1 = ask_for_more(&big, 2 * GiB);
    cudaError_t r2 = ask_for_more(&half, round_gib(f / 2.0));
    printf("fragmentation: blocks=%d free_after_release=%zu ask_2GiB=%d ask_half=%d half=%zu\n", n, f, r1, r2,
           round_gib(f / 2.0));
    cudaGetLastError();
    cudaFree(big);
    cudaFree(half);
    for (int i = 0; i < n; i += 2)
        cudaFree(blocks[i]);
    return 0;
}

__attribute__((noinline)) static cudaError_t make_pool(cudaMemPool_t *pool)
{
    cudaMemPoolProps props;
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

__attribute__((noinline)) static cudaError_t use_pool(cudaMemPool_t pool, void **p, size_t bytes, cudaStream_t s)
{
    return cudaMallocFromPoolAsync(p, bytes, pool, s);
}

static int caching(void)
{
    size_t f = free_now();
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemPool_t pool;
    void *scratch = NULL, *big = NULL;
    cudaError_t r1 = make_pool(&pool);
    cudaError_t r2 = use_pool(pool, &scratch, round_gib(f * 0.7), s);
    cudaFreeAsync(scratch, s);
    cudaStreamSynchronize(s);
    size_t reserved = 0;
    cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    cudaError_t r3 = ask_for_more(&big, round_gib(f * 0.5));
    cudaGetLastError();
    cudaError_t r4 = cudaMemPoolTrimTo(pool, 0);
    void *again = NULL;
    cudaError_t r5 = ask_for_more(&again, round_gib(f * 0.5));
    printf("caching: free=%zu pool=%d use=%d pool_reserved=%zu ask=%d trim=%d ask_again=%d\n", f, r1, r2, reserved,
           r3, r4, r5);
    cudaGetLastError();
    cudaFree(big);
    cudaFree(again);
    cudaMemPoolDestroy(pool);
    cudaStreamDestroy(s);
    return 0;
}

static int other(void)
{
    void *a = NULL, *b = NULL;
    cudaError_t r1 = hold_data(&a, 2 * GiB);
    size_t f = free_now();
    cudaError_t r2 = ask_for_more(&b, f + GiB);
    printf("other: free_before_ask=%zu hold=%d ask=%d\n", f, r1, r2);
    cudaGetLastError();
    cudaFree(a);
    cudaFree(b);
    return 0;
}

static void *cache[4];

__attribute__((noinline)) static cudaError_t cache_fill(size_t each)
{
    for (int i = 0; i < 4; i++) {
        cudaError_t r = cudaMalloc(&cache[i], each);
        if (r != cudaSuccess)
            return r;
    }
    return cudaSuccess;
}

/* What PyTorch's allocator does when the device says no: give every cached
 * block back and ask once more. */
__attribute__((noinline)) static cudaError_t cached_malloc(void **p, size_t bytes)
{
    cudaError_t r = cudaMalloc(p, bytes);
    if (r != cudaErrorMemoryAllocation)
        return r;
    cudaGetLastError();
    for (int i = 0; i < 4; i++)
        cudaFree(cache[i]);
    return cudaMalloc(p, bytes);
}

static int retry(void)
{
    size_t f = free_now();
    void *a = NULL, *b = NULL;
    cudaError_t r1 = cache_fill(round_gib(f * 0.2));
    cudaError_t r2 = hold_data(&a, round_gib(f * 0.1));
    cudaError_t r3 = cached_malloc(&b, round_gib(f * 0.3));
    printf("retry: free=%zu cache=%d hold=%d cached_malloc=%d\n", f, r1, r2, r3);
    cudaFree(a);
    cudaFree(b);
    return 0;
}

static int hold(double fraction, int seconds, const char *ready)
{
    void *p = NULL;
    size_t bytes = round_gib(free_now() * fraction);
    cudaError_t r = cudaMalloc(&p, bytes);
    cudaMemset(p, 0, bytes);
    cudaDeviceSynchronize();
    printf("hold: bytes=%zu result=%d\n", bytes, r);
    fflush(stdout);
    FILE *f = fopen(ready, "w");
    if (f)
        fclose(f);
    sleep((unsigned)seconds);
    cudaFree(p);
    return r == cudaSuccess ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: oom_verdicts capacity_large|capacity_live|fragmentation|caching|other|retry|hold ...\n");
        return 2;
    }
    const char *s = argv[1];
    if (!strcmp(s, "hold") && argc == 5)
        return hold(atof(argv[2]), atoi(argv[3]), argv[4]);
    cudaFree(0);
    if (!strcmp(s, "capacity_large"))
        return capacity_large();
    if (!strcmp(s, "capacity_live"))
        return capacity_live();
    if (!strcmp(s, "fragmentation"))
        return fragmentation();
    if (!strcmp(s, "caching"))
        return caching();
    if (!strcmp(s, "other"))
        return other();
    if (!strcmp(s, "retry"))
        return retry();
    fprintf(stderr, "oom_verdicts: unknown scenario %s\n", s);
    return 2;
}
