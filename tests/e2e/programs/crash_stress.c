/* SPDX-License-Identifier: MIT */
/* Threads allocate and free as fast as they can; after every call that
 * returned, the thread bumps its counter in a shared file, so whoever kills
 * this process knows how many calls had completed.
 * Usage: crash_stress COUNTERS_FILE THREADS */
#include <cuda_runtime_api.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static uint64_t *counters;

static void *work(void *arg)
{
    uint64_t *mine = &counters[(uintptr_t)arg * 8]; /* a cache line each */
    for (uint64_t i = 0;; i++) {
        void *p;
        if (cudaMalloc(&p, 4096 + (i % 16) * 4096) != cudaSuccess)
            abort();
        __atomic_store_n(mine, *mine + 1, __ATOMIC_RELEASE);
        if (cudaFree(p) != cudaSuccess)
            abort();
        __atomic_store_n(mine, *mine + 1, __ATOMIC_RELEASE);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int threads = atoi(argv[2]);
    int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0)
        return 2;
    counters = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (counters == MAP_FAILED || threads < 1 || threads > 64)
        return 2;
    pthread_t th[64];
    for (int t = 0; t < threads; t++)
        pthread_create(&th[t], NULL, work, (void *)(uintptr_t)t);
    puts("running");
    fflush(stdout);
    for (;;)
        pause();
}
