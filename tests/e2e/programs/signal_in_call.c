/* SPDX-License-Identifier: MIT */
/* Allocations made in a signal handler that runs inside a CUDA call (the
 * runtime raises the signal during every 64 KiB cudaMalloc): the profiler
 * cannot record them, and must count them (issue 15). N pairs in the main
 * thread; the handler allocates 4 KiB and never frees it: N leaks the
 * trace cannot show. Prints "main N handler H".
 * Usage: signal_in_call N */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

void lockfree_rt_raise_in_malloc(int sig, size_t size);

static volatile sig_atomic_t handler_allocs;

static void on_signal(int sig)
{
    (void)sig;
    void *p;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        handler_allocs++;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    lockfree_rt_raise_in_malloc(SIGUSR1, 65536);
    int pairs = 0;
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 65536) == cudaSuccess && cudaFree(p) == cudaSuccess)
            pairs++;
    }
    printf("main %d handler %d\n", pairs, (int)handler_allocs);
    return 0;
}
