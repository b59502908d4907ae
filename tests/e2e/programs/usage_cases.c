/* SPDX-License-Identifier: MIT */
/* The usage views' heuristics on cases they must know (issue 33 item 6).
 * Usage: usage_cases CASE, CASE one of
 *   pair      20 times: a = 1 MiB (alloc_a), b = 1 MiB (alloc_b), free b,
 *             free a: two sites with the same lifetimes, each short-lived
 *             in 19 of its 20 allocations (the last is never judged)
 *   async     20 times cudaMallocAsync and cudaFreeAsync of 1 MiB on a
 *             stream: a pool serves them, none is "short-lived"
 *   threads   4 threads, each 20 times a fixed size of its own (1, 2, 3,
 *             4 MiB) at one site: four sizes, no size churn
 *   teardown  one 8 MiB buffer, freed at the end right before exit: never
 *             short-lived */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB ((size_t)1 << 20)
#define CHECK(x)                                                                                                     \
    do {                                                                                                             \
        if ((x) != cudaSuccess) {                                                                                    \
            fprintf(stderr, "%s failed\n", #x);                                                                      \
            exit(1);                                                                                                 \
        }                                                                                                            \
    } while (0)

__attribute__((noinline)) static void *alloc_a(void)
{
    void *p;
    CHECK(cudaMalloc(&p, MiB));
    return p;
}

__attribute__((noinline)) static void *alloc_b(void)
{
    void *p;
    CHECK(cudaMalloc(&p, MiB));
    return p;
}

__attribute__((noinline)) static void *fixed_size(void *arg)
{
    size_t size = (size_t)(uintptr_t)arg * MiB;
    for (int i = 0; i < 20; i++) {
        void *p;
        CHECK(cudaMalloc(&p, size));
        CHECK(cudaFree(p));
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "pair")) {
        for (int i = 0; i < 20; i++) {
            void *a = alloc_a(), *b = alloc_b();
            CHECK(cudaFree(b));
            CHECK(cudaFree(a));
        }
    } else if (!strcmp(c, "async")) {
        cudaStream_t s;
        CHECK(cudaStreamCreate(&s));
        for (int i = 0; i < 20; i++) {
            void *p;
            CHECK(cudaMallocAsync(&p, MiB, s));
            CHECK(cudaFreeAsync(p, s));
        }
        CHECK(cudaStreamSynchronize(s));
    } else if (!strcmp(c, "threads")) {
        pthread_t th[4];
        for (uintptr_t t = 0; t < 4; t++)
            pthread_create(&th[t], NULL, fixed_size, (void *)(t + 1));
        for (int t = 0; t < 4; t++)
            pthread_join(th[t], NULL);
    } else if (!strcmp(c, "teardown")) {
        void *p;
        CHECK(cudaMalloc(&p, 8 * MiB));
        CHECK(cudaFree(p));
    } else {
        fprintf(stderr, "usage: usage_cases pair|async|threads|teardown\n");
        return 2;
    }
    printf("usage_cases done\n");
    return 0;
}
