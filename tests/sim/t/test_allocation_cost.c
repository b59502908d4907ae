/* SPDX-License-Identifier: MIT */
/* The profiler's overhead benchmarks run on the simulator, so its own cost
 * must stay small and flat: a cudaMalloc + cudaFree pair, with thousands of
 * other allocations live, must cost well under a microsecond. The bound here
 * is loose (a loaded CI machine must not fail it) but catches a hot path
 * that turned linear or worse. */
#include <time.h>

#include "check.h"
#include "simcuda.h"

#define LIVE 10000
#define PAIRS 200000
#define BOUND_NS 2000.0

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *live[LIVE];

int main(void)
{
    for (int i = 0; i < LIVE; i++)
        CHECK_RT(cudaMalloc(&live[i], 4096), cudaSuccess);
    /* Holes everywhere: every other block freed. */
    for (int i = 0; i < LIVE; i += 2)
        CHECK_RT(cudaFree(live[i]), cudaSuccess);

    double start = now_ns();
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        CHECK_RT(cudaMalloc(&p, 256), cudaSuccess);
        CHECK_RT(cudaFree(p), cudaSuccess);
    }
    double plain_ns = (now_ns() - start) / PAIRS;

    start = now_ns();
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        CHECK_RT(cudaMallocAsync(&p, 256, 0), cudaSuccess);
        CHECK_RT(cudaFreeAsync(p, 0), cudaSuccess);
    }
    double async_ns = (now_ns() - start) / PAIRS;
    printf("cudaMalloc+cudaFree: %.0f ns, cudaMallocAsync+cudaFreeAsync: %.0f ns (with %d live)\n", plain_ns, async_ns, LIVE / 2);
    CHECK(plain_ns < BOUND_NS);
    CHECK(async_ns < BOUND_NS);

    for (int i = 1; i < LIVE; i += 2)
        CHECK_RT(cudaFree(live[i]), cudaSuccess);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    return 0;
}
