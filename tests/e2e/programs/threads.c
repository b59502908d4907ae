/* SPDX-License-Identifier: MIT */
/* THREADS threads x PER_THREAD allocations, each freed: no event may be lost.
 * Usage: threads [threads] [per_thread] */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int per_thread = 10000;

__attribute__((noinline)) static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < per_thread; i++) {
        void *p;
        if (cudaMalloc(&p, 4096 + (size_t)(i % 7) * 512) != cudaSuccess || cudaFree(p) != cudaSuccess) {
            fprintf(stderr, "allocation failed\n");
            exit(1);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    if (argc > 2)
        per_thread = atoi(argv[2]);
    pthread_t th[256];
    if (threads < 1 || threads > 256)
        return 2;
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, worker, NULL);
    for (int t = 0; t < threads; t++)
        pthread_join(th[t], NULL);
    printf("threads done\n");
    return 0;
}
