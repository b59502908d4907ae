/* SPDX-License-Identifier: MIT */
/* One program, two twins: the same allocation pattern made with malloc/free
 * (twin_malloc, recorded by heaptrack) and with cudaMalloc/cudaFree
 * (twin_cuda, recorded by the shim over the null runtime), so that
 * `heaptrack_print` and `cumemtrace report` analyse the same shape of work
 * side by side (bench/twin_bench.py; docs/performance.md, "Side by side with
 * heaptrack").
 *
 *   twin_malloc|twin_cuda [--pairs N] [--teeth-height H]
 *
 * N allocation/release pairs (default 5,000,000) from 64 call sites (64
 * functions, each a distinct stack), in a sawtooth of live blocks: H blocks
 * allocated (default 1,000), then released last-in first-out, again and
 * again. Sizes are whole 512-byte steps from 512 bytes to 64 KiB (what
 * cudaMalloc hands out; the same sizes for malloc), drawn from a fixed
 * sequence: both twins make the same calls in the same order. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TWIN_CUDA
#include <cuda_runtime_api.h>
static void *twin_alloc(size_t size)
{
    void *p = NULL;
    return cudaMalloc(&p, size) == cudaSuccess ? p : NULL;
}
static void twin_free(void *p)
{
    cudaFree(p);
}
#else
static void *twin_alloc(size_t size)
{
    return malloc(size);
}
static void twin_free(void *p)
{
    free(p);
}
#endif

typedef void *(*site_fn)(size_t size);

/* 64 call sites: each its own function (never inlined), so each allocation
 * is recorded with one of 64 stacks. */
/* calls per site: it also keeps the 64 functions distinct (identical
 * bodies would be folded into one by the compiler's -fipa-icf) */
static volatile unsigned long site_calls[89];
#define SITE(n)                                                                                                        \
    static __attribute__((noinline)) void *site_##n(size_t size)                                                      \
    {                                                                                                                  \
        site_calls[n]++;                                                                                               \
        void *p = twin_alloc(size);                                                                                    \
        __asm__ volatile("" ::: "memory");                                                                             \
        return p;                                                                                                      \
    }
#define SITES8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
SITES8(1)
SITES8(2)
SITES8(3)
SITES8(4)
SITES8(5)
SITES8(6)
SITES8(7)
SITES8(8)
#define REF8(a) site_##a##0, site_##a##1, site_##a##2, site_##a##3, site_##a##4, site_##a##5, site_##a##6, site_##a##7
static const site_fn sites[64] = {REF8(1), REF8(2), REF8(3), REF8(4), REF8(5), REF8(6), REF8(7), REF8(8)};

static unsigned long parse_number(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end || v == 0) {
        fprintf(stderr, "twin: %s wants a positive number, not '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    unsigned long pairs = 5000000, height = 1000;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--pairs"))
            pairs = parse_number(v, a), i++;
        else if (!strcmp(a, "--teeth-height"))
            height = parse_number(v, a), i++;
        else {
            fprintf(stderr, "usage: twin [--pairs N] [--teeth-height H]\n");
            return 2;
        }
    }
    void **live = calloc(height, sizeof *live);
    if (!live)
        return 1;
    uint64_t x = 0x9e3779b97f4a7c15ull; /* xorshift: the same sizes and sites every run */
    unsigned long made = 0, failed = 0;
    while (made < pairs) {
        unsigned long n = pairs - made < height ? pairs - made : height;
        for (unsigned long i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t size = (size_t)512 << (x % 8); /* 512 B .. 64 KiB */
            live[i] = sites[(x >> 8) % 64](size);
            failed += live[i] == NULL;
        }
        for (unsigned long i = n; i-- > 0;)
            twin_free(live[i]);
        made += n;
    }
    free(live);
    printf("{\"pairs\": %lu, \"failed\": %lu}\n", made, failed);
    return failed ? 1 : 0;
}
