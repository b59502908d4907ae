/* SPDX-License-Identifier: MIT */
/* A test binary for `cumemtrace check`: runs the actions named on its
 * command line, in order, each at its own call site, so tests can make a
 * run leak, peak, fail or crash exactly as much as they need:
 *
 *   clean      2 MiB allocated and freed                     (clean_work)
 *   leak:N     N x 1 MiB never freed                         (leak_one)
 *   new:N      N x 1 MiB never freed at another call site    (leak_new)
 *   peak:N     one N MiB block, freed at once                (peak_block)
 *   vendor     libcmt_vendor.so keeps 4 MiB until exit       (vendor_init_workspace)
 *   cublas     the cuBLAS test double keeps 2 MiB            (cublasCreate_v2)
 *   oom        asks for 1 TiB, which fails                   (try_too_big)
 *   fork       a child process does leak:1, the parent waits
 *   segv       dies of SIGSEGV
 *   exit:N     exit(N)
 *   _exit      _exit(0): no exit handlers, so the trace is not closed
 * It prints "gate done" when every action ran. */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The shifted build (tests/e2e/shifted) moves every line below by a fixed
 * amount: the same call sites at other lines, as after an edit. */
#ifdef GATE_SHIFTED
#line 1000
#endif

#define MiB (1024u * 1024u)

void *vendor_init_workspace(void);
int cublasCreate_v2(void **handle);

static void check(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "gate: %s failed: %d\n", what, r);
        exit(4);
    }
}

__attribute__((noinline)) static void clean_work(void)
{
    void *p;
    check(cudaMalloc(&p, 2 * MiB), "clean_work");
    check(cudaFree(p), "clean_work free");
}

__attribute__((noinline)) static void leak_one(void)
{
    void *p;
    check(cudaMalloc(&p, 1 * MiB), "leak_one");
}

__attribute__((noinline)) static void leak_new(void)
{
    void *p;
    check(cudaMalloc(&p, 1 * MiB), "leak_new");
}

__attribute__((noinline)) static void peak_block(unsigned mib)
{
    void *p;
    check(cudaMalloc(&p, (size_t)mib * MiB), "peak_block");
    check(cudaFree(p), "peak_block free");
}

__attribute__((noinline)) static void try_too_big(void)
{
    void *p = NULL;
    if (cudaMalloc(&p, (size_t)1 << 40) == cudaSuccess)
        exit(5);
}

static void run_action(const char *a);

__attribute__((noinline)) static void fork_child(void)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        exit(6);
    if (pid == 0) {
        run_action("leak:1");
        exit(0);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        exit(7);
}

static void run_action(const char *a)
{
    unsigned n = 0;
    if (!strcmp(a, "clean")) {
        clean_work();
    } else if (sscanf(a, "leak:%u", &n) == 1) {
        for (unsigned i = 0; i < n; i++)
            leak_one();
    } else if (sscanf(a, "new:%u", &n) == 1) {
        for (unsigned i = 0; i < n; i++)
            leak_new();
    } else if (sscanf(a, "peak:%u", &n) == 1) {
        peak_block(n);
    } else if (!strcmp(a, "vendor")) {
        if (!vendor_init_workspace())
            exit(4);
    } else if (!strcmp(a, "cublas")) {
        void *handle;
        if (cublasCreate_v2(&handle) != 0)
            exit(4);
    } else if (!strcmp(a, "oom")) {
        try_too_big();
    } else if (!strcmp(a, "fork")) {
        fork_child();
    } else if (!strcmp(a, "segv")) {
        fflush(stdout);
        raise(SIGSEGV);
    } else if (sscanf(a, "exit:%u", &n) == 1) {
        exit((int)n);
    } else if (!strcmp(a, "_exit")) {
        fflush(stdout);
        _exit(0);
    } else {
        fprintf(stderr, "gate: unknown action %s\n", a);
        exit(2);
    }
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        run_action(argv[i]);
    printf("gate done\n");
    return 0;
}
