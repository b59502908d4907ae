/* SPDX-License-Identifier: MIT */
/* THREADS threads free and re-allocate the same few addresses as fast as
 * they can: every thread asks for the same size, and the simulated device
 * hands out the lowest free address at once (first fit; a pool's freed
 * bytes are free again when cudaFreeAsync returns), so an address one
 * thread frees is, most of the time, the next allocation of another.
 * Started together behind a barrier, so the threads overlap from the first
 * pair. A correct program: every allocation is freed.
 * Usage: reuse_race MODE THREADS PAIRS, MODE one of
 *   malloc  cudaMalloc + cudaFree
 *   async   cudaMallocAsync + cudaFreeAsync, one stream per thread, all on
 *           the device's default pool
 *   mixed   even threads malloc, odd threads async
 *   relay   cudaMalloc + cudaFree, the threads taking turns in a ring (a
 *           token passed through an atomic): each free is followed at once
 *           by the next thread's allocation of the same address, a hundred
 *           or two nanoseconds later, the closest two threads' events get */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE 4096

static long pairs;
static int mode_async; /* 0 malloc, 1 async, 2 mixed, 3 relay */
static int threads;
static long turn; /* relay: whose turn it is, counted over the whole ring */
static pthread_barrier_t start;

static void fail(const char *what, cudaError_t err)
{
    fprintf(stderr, "%s failed: %d\n", what, (int)err);
    exit(1);
}

static void *worker(void *arg)
{
    int index = (int)(uintptr_t)arg;
    int async = mode_async == 1 || (mode_async == 2 && index % 2 == 1);
    cudaStream_t stream = NULL;
    cudaError_t err;
    if (async && (err = cudaStreamCreate(&stream)) != cudaSuccess)
        fail("cudaStreamCreate", err);
    pthread_barrier_wait(&start);
    for (long i = 0; i < pairs; i++) {
        if (mode_async == 3) {
            /* Spin for the token; yield now and then, for a loaded machine. */
            long mine = i * threads + index;
            for (unsigned spins = 1; __atomic_load_n(&turn, __ATOMIC_ACQUIRE) != mine; spins++)
                if (spins % 1024 == 0)
                    sched_yield();
        }
        void *p;
        if (async) {
            if ((err = cudaMallocAsync(&p, SIZE, stream)) != cudaSuccess)
                fail("cudaMallocAsync", err);
            if ((err = cudaFreeAsync(p, stream)) != cudaSuccess)
                fail("cudaFreeAsync", err);
        } else {
            if ((err = cudaMalloc(&p, SIZE)) != cudaSuccess)
                fail("cudaMalloc", err);
            if ((err = cudaFree(p)) != cudaSuccess)
                fail("cudaFree", err);
        }
        if (mode_async == 3)
            __atomic_store_n(&turn, i * threads + index + 1, __ATOMIC_RELEASE);
    }
    if (async && (err = cudaStreamDestroy(stream)) != cudaSuccess)
        fail("cudaStreamDestroy", err);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    if (strcmp(argv[1], "malloc") == 0)
        mode_async = 0;
    else if (strcmp(argv[1], "async") == 0)
        mode_async = 1;
    else if (strcmp(argv[1], "mixed") == 0)
        mode_async = 2;
    else if (strcmp(argv[1], "relay") == 0)
        mode_async = 3;
    else
        return 2;
    threads = atoi(argv[2]);
    pairs = atol(argv[3]);
    if (threads < 1 || threads > 64 || pairs < 1)
        return 2;
    /* The device and its default pool exist before the threads race. */
    cudaError_t err = cudaFree(NULL);
    if (err != cudaSuccess)
        fail("cudaFree(NULL)", err);
    pthread_t th[64];
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, worker, (void *)(uintptr_t)t);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    pthread_barrier_destroy(&start);
    printf("reuse_race %s %d x %ld\n", argv[1], threads, pairs);
    return 0;
}
