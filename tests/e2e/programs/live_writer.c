/* SPDX-License-Identifier: MIT */
/* A process whose trace is read while it is still written (issue 32):
 *
 *   live_writer THREADS
 *
 * keeps 3 x 1 MiB (keep_buffers) and allocates and frees 2 MiB
 * (scratch_buffer), then starts THREADS threads that allocate and free
 * 4 KiB pairs (churn): 2,000 at full speed, then 8 at a time with a pause of
 * 1 ms between, up to 40,000 pairs a thread (some seconds), so the trace
 * grows while it is read (new chunks, new segments of the file), and stops
 * growing after that. The bound is what keeps the test's time bounded: a
 * writer that appended until told to stop made every later read longer
 * than the one before, and under ASan on a loaded machine the reads fell
 * behind for good (a 600 s timeout in 1 of 13 rounds). Once each thread
 * made 2,000 pairs it prints "ready" and waits for a line on stdin; then it
 * stops the threads, frees the 3 MiB and exits 0, printing
 * "live_writer done". */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MiB (1024u * 1024u)

static volatile int stop;
static int started;

__attribute__((noinline)) static void keep_buffers(void **keep)
{
    for (int i = 0; i < 3; i++)
        if (cudaMalloc(&keep[i], 1 * MiB) != cudaSuccess)
            exit(3);
}

__attribute__((noinline)) static void scratch_buffer(void)
{
    void *p;
    if (cudaMalloc(&p, 2 * MiB) != cudaSuccess || cudaFree(p) != cudaSuccess)
        exit(3);
}

#define CHURN_PAIRS_MAX 40000

static void *churn(void *arg)
{
    (void)arg;
    long i = 0;
    for (; i < CHURN_PAIRS_MAX && !__atomic_load_n(&stop, __ATOMIC_RELAXED); i++) {
        void *p;
        if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
            exit(4);
        if (i == 2000)
            __atomic_fetch_add(&started, 1, __ATOMIC_RELEASE);
        if (i > 2000 && i % 8 == 0) {
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
    /* Done appending: idle until told to stop (a process that still runs,
     * its trace still being written as far as a reader can tell). */
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
        struct timespec pause = {0, 10000000};
        nanosleep(&pause, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    if (threads < 0 || threads > 64)
        return 2;
    void *keep[3];
    keep_buffers(keep);
    scratch_buffer();
    pthread_t th[64];
    for (int i = 0; i < threads; i++)
        pthread_create(&th[i], NULL, churn, NULL);
    while (__atomic_load_n(&started, __ATOMIC_ACQUIRE) < threads)
        sched_yield();
    printf("ready\n");
    fflush(stdout);
    char line[16];
    if (!fgets(line, sizeof line, stdin))
        line[0] = '\0';
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < threads; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 3; i++)
        cudaFree(keep[i]);
    printf("live_writer done\n");
    return 0;
}
