/* SPDX-License-Identifier: MIT */
/* Allocates, then kills itself with a signal half-way: the trace must hold
 * every event completed before the kill. Usage: killed N SIGNAL
 * (N allocations of 1 MiB, then the signal: 9 SIGKILL, 11 SIGSEGV, 6 abort). */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static void allocate_one(void)
{
    void *p;
    if (cudaMalloc(&p, 1u << 20) != cudaSuccess)
        exit(3);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    int sig = argc > 2 ? atoi(argv[2]) : SIGKILL;
    for (int i = 0; i < n; i++)
        allocate_one();
    printf("allocated %d\n", n);
    fflush(stdout);
    if (sig == SIGABRT)
        abort();
    raise(sig);
    return 0;
}
