/* SPDX-License-Identifier: MIT */
/* The main thread allocates and frees in a loop while a fast timer signal
 * runs a handler that allocates and frees too, landing at every point of the
 * hooks, including inside them. Prints how many pairs each made.
 * Usage: signal_reentry N [keep]  ("keep": the timer still fires while the
 * process exits, i.e. while the profiler closes its trace). */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile sig_atomic_t handler_pairs;

static void on_alarm(int sig)
{
    (void)sig;
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess && cudaFree(p) == cudaSuccess)
        handler_pairs++;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    struct sigaction sa = {.sa_handler = on_alarm};
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 50}, {0, 50}}; /* every 50 us */
    setitimer(ITIMER_REAL, &it, NULL);
    int pairs = 0;
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 65536) == cudaSuccess && cudaFree(p) == cudaSuccess)
            pairs++;
    }
    if (argc < 3) {
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    }
    printf("main %d handler %d\n", pairs, (int)handler_pairs);
    return 0;
}
