/* SPDX-License-Identifier: MIT */
/* Known peak, known leaks. Sizes are exact so tests can assert bytes:
 *   keep_forever:        64 MiB once, never freed            (leak: once)
 *   leak_per_iteration:   1 MiB x 5, never freed              (leak: repeated)
 *   peak_phase:          16 MiB x 3, freed                    (the peak)
 *   scratch:             32 MiB x 3, each freed at once
 * Peak on device 0 = 64 + 3 x 1 (iterations before the peak phase) + 48 = 115 MiB. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#define MiB (1024u * 1024u)

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

__attribute__((noinline)) static void *keep_forever(void)
{
    void *p;
    check(cudaMalloc(&p, 64 * MiB), "keep_forever");
    return p;
}

__attribute__((noinline)) static void leak_per_iteration(void)
{
    void *p;
    check(cudaMalloc(&p, 1 * MiB), "leak_per_iteration");
}

__attribute__((noinline)) static void scratch(void)
{
    void *p;
    check(cudaMalloc(&p, 32 * MiB), "scratch");
    check(cudaFree(p), "scratch free");
}

__attribute__((noinline)) static void peak_phase(void)
{
    void *p[3];
    for (int i = 0; i < 3; i++)
        check(cudaMalloc(&p[i], 16 * MiB), "peak_phase");
    for (int i = 0; i < 3; i++)
        check(cudaFree(p[i]), "peak_phase free");
}

int main(void)
{
    keep_forever();
    for (int i = 0; i < 3; i++) {
        leak_per_iteration();
        scratch();
    }
    peak_phase();
    for (int i = 0; i < 2; i++)
        leak_per_iteration();
    printf("leak_peak done\n");
    return 0;
}
