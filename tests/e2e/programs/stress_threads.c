/* SPDX-License-Identifier: MIT */
/* THREADS x PAIRS allocation/release pairs. Usage: stress_threads THREADS PAIRS */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static long pairs;

static void *work(void *arg)
{
    size_t size = 512 * (1 + (uintptr_t)arg);
    for (long i = 0; i < pairs; i++) {
        void *p;
        if (cudaMalloc(&p, size) != cudaSuccess || cudaFree(p) != cudaSuccess)
            abort();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int threads = atoi(argv[1]);
    pairs = atol(argv[2]);
    pthread_t th[256];
    if (threads < 1 || threads > 256)
        return 2;
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, work, (void *)(uintptr_t)t);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    printf("done %d x %ld\n", threads, pairs);
    return 0;
}
