/* SPDX-License-Identifier: MIT */
/* The profiler's overhead benchmarks run on the simulator, so its own cost
 * must stay small and flat: a cudaMalloc + cudaFree pair, with thousands of
 * other allocations live and holes everywhere, must take a few steps of the
 * simulator's bookkeeping (holes examined or moved, table slots probed, pool
 * segments tried: simcuda_work_steps), not a number that grows with what is
 * live. Counted, not timed: a time bound flakes on a loaded machine (it
 * measured 2,394 ns against a bound of 2,000 under ASan beside other builds,
 * issue 32). The time per pair is bench/sim's sim_allocation_cost. */
#include "check.h"
#include "simcuda.h"

#define LIVE 10000
#define PAIRS 20000
/* Per pair: a table insert, lookup and removal (a probe or two each, the
 * table kept at most half full), the first hole (every hole here fits),
 * the coalescing free's binary search over 5,000 holes (13 steps) and a
 * hole shifted back; the pool's first segment. Generous; a linear walk over
 * the live blocks or the holes would take thousands. */
#define STEPS_PER_PAIR_MAX 64

static void *live[LIVE];

int main(void)
{
    for (int i = 0; i < LIVE; i++)
        CHECK_RT(cudaMalloc(&live[i], 4096), cudaSuccess);
    /* Holes everywhere: every other block freed. */
    for (int i = 0; i < LIVE; i += 2)
        CHECK_RT(cudaFree(live[i]), cudaSuccess);

    unsigned long long start = simcuda_work_steps();
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        CHECK_RT(cudaMalloc(&p, 256), cudaSuccess);
        CHECK_RT(cudaFree(p), cudaSuccess);
    }
    unsigned long long plain = simcuda_work_steps() - start;

    start = simcuda_work_steps();
    for (int i = 0; i < PAIRS; i++) {
        void *p;
        CHECK_RT(cudaMallocAsync(&p, 256, 0), cudaSuccess);
        CHECK_RT(cudaFreeAsync(p, 0), cudaSuccess);
    }
    unsigned long long async = simcuda_work_steps() - start;
    printf("steps per pair with %d live: cudaMalloc+cudaFree %.1f, cudaMallocAsync+cudaFreeAsync %.1f\n", LIVE / 2,
           (double)plain / PAIRS, (double)async / PAIRS);
    CHECK(plain > 0 && plain <= (unsigned long long)PAIRS * STEPS_PER_PAIR_MAX);
    CHECK(async > 0 && async <= (unsigned long long)PAIRS * STEPS_PER_PAIR_MAX);

    for (int i = 1; i < LIVE; i += 2)
        CHECK_RT(cudaFree(live[i]), cudaSuccess);
    CHECK_RT(cudaDeviceSynchronize(), cudaSuccess);
    CHECK_EQ(simcuda_live_allocations(-1), 0);
    return 0;
}
