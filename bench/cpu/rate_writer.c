/* SPDX-License-Identifier: MIT */
/* The writer `cumemtrace top`'s benchmark follows (bench/top_cost.py): a
 * program on the simulated device that makes allocation + release pairs at
 * a fixed rate of events per second, from SITES call sites (each a call
 * chain of its own depth, so each its own stack), keeping KEEP
 * allocations live in a ring so releases find real entries.
 *
 *   rate_writer RATE SECONDS [SITES] [KEEP]
 *
 * Paces itself every 1,000 events (sleeps when ahead of the rate). Prints
 * one JSON line: events made, wall seconds, the rate reached, its CPU
 * seconds. RATE 0: as fast as it can. */
#include <cumemtrace/cumemtrace.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static uint64_t clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void *ring[4096];
static unsigned keep = 256, at;

static __attribute__((noinline)) int pair(size_t size)
{
    void *p;
    if (cudaMalloc(&p, size) != cudaSuccess)
        return -1;
    void *old = ring[at];
    ring[at] = p;
    at = (at + 1) % keep;
    return old && cudaFree(old) != cudaSuccess ? -1 : 0;
}

/* depth levels of frames above pair(): one stack per depth */
static __attribute__((noinline)) int site(volatile unsigned depth, size_t size)
{
    if (depth == 0)
        return pair(size);
    int v = site(depth - 1, size);
    __asm__ volatile("" ::: "memory");
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: rate_writer RATE SECONDS [SITES] [KEEP]\n");
        return 2;
    }
    double rate = atof(argv[1]), seconds = atof(argv[2]);
    unsigned sites = argc > 3 ? (unsigned)atoi(argv[3]) : 16;
    keep = argc > 4 ? (unsigned)atoi(argv[4]) : 256;
    if (!sites || !keep || keep > 4096)
        return 2;
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    uint64_t end = t0 + (uint64_t)(seconds * 1e9), events = 0, step = 0;
    for (uint64_t i = 0;; i++) {
        /* an allocation and, once the ring is full, a release: 2 events */
        if (site(i % sites, 4096 + (i % 7) * 512) != 0)
            return 3;
        events += i >= keep ? 2 : 1;
        if (i % 1000 == 999) {
            uint64_t now = clock_ns(CLOCK_MONOTONIC);
            if (now >= end)
                break;
            if (i % 100000 == 99999)
                cumemtrace_step(++step);
            if (rate > 0) {
                uint64_t due = t0 + (uint64_t)((double)events / rate * 1e9);
                if (due > now) {
                    struct timespec d = {(time_t)((due - now) / 1000000000ull), (long)((due - now) % 1000000000ull)};
                    nanosleep(&d, NULL);
                }
            }
        }
    }
    uint64_t t1 = clock_ns(CLOCK_MONOTONIC), c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    double wall = (double)(t1 - t0) / 1e9;
    printf("{\"events\": %llu, \"wall_s\": %.3f, \"events_per_s\": %.0f, \"cpu_s\": %.3f}\n",
           (unsigned long long)events, wall, (double)events / wall, (double)(c1 - c0) / 1e9);
    return 0;
}
