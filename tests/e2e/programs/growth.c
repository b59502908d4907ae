/* SPDX-License-Identifier: MIT */
/* growth ITERATIONS SLEEP_US [kill]
 *
 * Beside each other, three ways memory stays live:
 *   load_model:   64 MiB once at start-up, never freed     (allocated once)
 *   warm_cache:    2 MiB in each of the first 10 iterations, kept: grows
 *                  during warm-up, then stays flat          (repeated, not growth)
 *   leak_one:      1 MiB in every iteration, never freed    (repeated, growth)
 * and scratch: 8 MiB allocated and freed in every iteration.
 * Peak = 64 + 2 x min(ITERATIONS, 10) + ITERATIONS + 8 MiB, in the last
 * iteration's scratch. With "kill" the program ends by SIGKILL, like a long
 * job that never exits cleanly. */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MiB (1024u * 1024u)

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "%s failed: %d\n", what, r);
        exit(1);
    }
}

__attribute__((noinline)) static void load_model(void)
{
    void *p;
    check(cudaMalloc(&p, 64 * MiB), "load_model");
}

__attribute__((noinline)) static void warm_cache(void)
{
    void *p;
    check(cudaMalloc(&p, 2 * MiB), "warm_cache");
}

__attribute__((noinline)) static void leak_one(void)
{
    void *p;
    check(cudaMalloc(&p, 1 * MiB), "leak_one");
}

__attribute__((noinline)) static void scratch(void)
{
    void *p;
    check(cudaMalloc(&p, 8 * MiB), "scratch");
    check(cudaFree(p), "scratch free");
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int iterations = atoi(argv[1]);
    int sleep_us = atoi(argv[2]);
    load_model();
    for (int i = 0; i < iterations; i++) {
        if (i < 10)
            warm_cache();
        leak_one();
        scratch();
        if (sleep_us)
            usleep((useconds_t)sleep_us);
    }
    printf("growth done\n");
    fflush(stdout);
    if (argc > 3)
        raise(SIGKILL);
    return 0;
}
