/* SPDX-License-Identifier: MIT */
/* The simulated device's own time per allocation pair (cudaMalloc +
 * cudaFree, cudaMallocAsync + cudaFreeAsync) with 5,000 allocations live and
 * holes everywhere: what the profiler's overhead figures on the simulator
 * stand on. A figure, not a test: tests/sim's allocation_cost counts the
 * simulator's steps per pair instead (a time bound flaked under load). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define LIVE 10000
#define PAIRS 200000

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *live[LIVE];

static void must(cudaError_t r)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "sim_allocation_cost: CUDA error %d\n", r);
        exit(1);
    }
}

int main(void)
{
    for (int i = 0; i < LIVE; i++)
        must(cudaMalloc(&live[i], 4096));
    for (int i = 0; i < LIVE; i += 2)
        must(cudaFree(live[i]));
    double start = now_ns();
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        must(cudaMalloc(&p, 256));
        must(cudaFree(p));
    }
    double plain_ns = (now_ns() - start) / PAIRS;
    start = now_ns();
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        must(cudaMallocAsync(&p, 256, 0));
        must(cudaFreeAsync(p, 0));
    }
    double async_ns = (now_ns() - start) / PAIRS;
    printf("cudaMalloc+cudaFree: %.0f ns, cudaMallocAsync+cudaFreeAsync: %.0f ns (with %d live)\n", plain_ns,
           async_ns, LIVE / 2);
    for (int i = 1; i < LIVE; i += 2)
        must(cudaFree(live[i]));
    return 0;
}
