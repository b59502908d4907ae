/* SPDX-License-Identifier: MIT */
/* fork under the profiler.
 *   forker simple    parent: 2 allocations, fork, 1 more; child: 2 allocations, 1 free, exit
 *   forker threaded  4 threads allocate and free 20000 pairs each while the main thread forks 20
 *                    children; each child allocates 2, frees 1 and exits
 *   forker racing    the same with 8 threads of 5000 pairs, and no CUDA call before the threads
 *                    start: their first calls (the runtime's and the profiler's lazy set-up) race
 *                    the forks
 * Every child's status must be 0. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1u << 20)

__attribute__((noinline)) static void child_work(void)
{
    void *a, *b;
    if (cudaMalloc(&a, 1 * MiB) || cudaMalloc(&b, 2 * MiB) || cudaFree(b))
        _exit(3);
}

static pid_t fork_child(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        child_work();
        exit(0); /* a normal exit: the child's trace is closed cleanly */
    }
    return pid;
}

static int wait_ok(pid_t pid)
{
    int status;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void *churn(void *arg)
{
    (void)arg;
    for (int i = 0; i < 20000; i++) {
        void *p;
        if (cudaMalloc(&p, 8192) || cudaFree(p))
            exit(4);
    }
    return NULL;
}

static void *churn_short(void *arg)
{
    (void)arg;
    for (int i = 0; i < 5000; i++) {
        void *p;
        if (cudaMalloc(&p, 8192) || cudaFree(p))
            exit(4);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    void *keep[3];
    if (argc > 1 && !strcmp(argv[1], "racing")) {
        pthread_t th[8];
        for (int i = 0; i < 8; i++)
            pthread_create(&th[i], NULL, churn_short, NULL);
        int ok = 0;
        for (int i = 0; i < 20; i++)
            ok += wait_ok(fork_child());
        for (int i = 0; i < 8; i++)
            pthread_join(th[i], NULL);
        printf("children ok %d\n", ok);
        return ok == 20 ? 0 : 1;
    }
    if (argc > 1 && !strcmp(argv[1], "threaded")) {
        /* CUDA initialised before the threads start, as programs do
         * (with a call the profiler does not hook: the trace keeps exactly
         * the four churning threads); forker racing does not. */
        int device;
        if (cudaGetDevice(&device) != cudaSuccess)
            return 5;
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, churn, NULL);
        int ok = 0;
        for (int i = 0; i < 20; i++)
            ok += wait_ok(fork_child());
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        printf("children ok %d\n", ok);
        return ok == 20 ? 0 : 1;
    }
    cudaMalloc(&keep[0], 4 * MiB);
    cudaMalloc(&keep[1], 4 * MiB);
    pid_t pid = fork_child();
    cudaMalloc(&keep[2], 4 * MiB);
    int ok = wait_ok(pid);
    printf("child ok %d\n", ok);
    return ok ? 0 : 1;
}
