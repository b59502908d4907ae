/* SPDX-License-Identifier: MIT */
/* The CPU benchmark's program: each thread descends a call chain of a chosen
 * depth, then makes stream-ordered allocation + release pairs in a loop,
 * always from the same call site, and measures the loop. Run it natively and
 * under the shim (bench/run_cpu_bench.py does, alternating); the difference
 * is what recording costs per event.
 *
 *   alloc_loop [--threads N] [--pairs P] [--warmup W] [--chain D] [--api async|plain]
 *
 * Prints one JSON line: events made, wall and per-thread CPU nanoseconds per
 * event (median over threads). */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static unsigned opt_threads = 1;
static unsigned long opt_pairs = 200000;
static unsigned long opt_warmup = 20000;
static unsigned opt_chain = 40;
static int opt_plain;

static pthread_barrier_t start_line;

struct thread_result {
    double wall_ns, cpu_ns;
    int failed;
};

static uint64_t clock_ns(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int one_pair(cudaStream_t stream)
{
    void *p;
    if (opt_plain) {
        if (cudaMalloc(&p, 512) != cudaSuccess || cudaFree(p) != cudaSuccess)
            return -1;
    } else {
        if (cudaMallocAsync(&p, 512, stream) != cudaSuccess || cudaFreeAsync(p, stream) != cudaSuccess)
            return -1;
    }
    return 0;
}

/* The loop lives at the bottom of the chain so every allocation has the same
 * stack: opt_chain frames of descend(), then the thread's start. */
static __attribute__((noinline)) void allocation_loop(struct thread_result *r)
{
    cudaStream_t stream = 0;
    for (unsigned long i = 0; i < opt_warmup; i++)
        if (one_pair(stream) != 0)
            r->failed = 1;
    pthread_barrier_wait(&start_line);
    uint64_t w0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
    for (unsigned long i = 0; i < opt_pairs; i++)
        if (one_pair(stream) != 0)
            r->failed = 1;
    uint64_t c1 = clock_ns(CLOCK_THREAD_CPUTIME_ID), w1 = clock_ns(CLOCK_MONOTONIC);
    r->wall_ns = (double)(w1 - w0) / (2.0 * (double)opt_pairs);
    r->cpu_ns = (double)(c1 - c0) / (2.0 * (double)opt_pairs);
}

/* volatile depth and the work after the call keep the compiler from turning
 * the recursion into a loop or a tail call: each level is a real frame. */
static __attribute__((noinline)) int descend(volatile unsigned depth, struct thread_result *r)
{
    if (depth == 0) {
        allocation_loop(r);
        return 0;
    }
    int v = descend(depth - 1, r);
    __asm__ volatile("" ::: "memory");
    return v + 1;
}

static void *thread_main(void *arg)
{
    descend(opt_chain, arg);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static unsigned long parse_number(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end) {
        fprintf(stderr, "alloc_loop: %s wants a number, not '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--threads"))
            opt_threads = (unsigned)parse_number(v, a), i++;
        else if (!strcmp(a, "--pairs"))
            opt_pairs = parse_number(v, a), i++;
        else if (!strcmp(a, "--warmup"))
            opt_warmup = parse_number(v, a), i++;
        else if (!strcmp(a, "--chain"))
            opt_chain = (unsigned)parse_number(v, a), i++;
        else if (!strcmp(a, "--api") && (!strcmp(v, "async") || !strcmp(v, "plain")))
            opt_plain = !strcmp(v, "plain"), i++;
        else {
            fprintf(stderr, "usage: alloc_loop [--threads N] [--pairs P] [--warmup W] [--chain D] [--api async|plain]\n");
            return 2;
        }
    }
    if (opt_threads == 0 || opt_threads > 256 || opt_pairs == 0) {
        fprintf(stderr, "alloc_loop: --threads must be 1..256 and --pairs at least 1\n");
        return 2;
    }
    /* Creates the context before any timing. */
    if (cudaFree(0) != cudaSuccess) {
        fprintf(stderr, "alloc_loop: no CUDA device (cudaFree(0) failed)\n");
        return 1;
    }
    pthread_barrier_init(&start_line, NULL, opt_threads);
    pthread_t tids[256];
    struct thread_result results[256];
    memset(results, 0, sizeof results);
    for (unsigned t = 0; t < opt_threads; t++)
        if (pthread_create(&tids[t], NULL, thread_main, &results[t]) != 0) {
            fprintf(stderr, "alloc_loop: cannot create thread %u\n", t);
            return 1;
        }
    double wall[256], cpu[256];
    int failed = 0;
    for (unsigned t = 0; t < opt_threads; t++) {
        pthread_join(tids[t], NULL);
        wall[t] = results[t].wall_ns;
        cpu[t] = results[t].cpu_ns;
        failed |= results[t].failed;
    }
    if (failed) {
        fprintf(stderr, "alloc_loop: an allocation or release failed\n");
        return 1;
    }
    printf("{\"threads\": %u, \"events\": %lu, \"wall_ns_per_event\": %.2f, \"cpu_ns_per_event\": %.2f}\n",
           opt_threads, 2 * (opt_pairs + opt_warmup) * opt_threads, median(wall, opt_threads),
           median(cpu, opt_threads));
    return 0;
}
