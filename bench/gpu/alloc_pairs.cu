// SPDX-License-Identifier: MIT
// GPU benchmark of allocation pairs (bench/gpu/run_overhead_bench.sh): each
// process makes pairs in timed blocks from one call site at the bottom of a
// call chain, so that the recorded stack is about 24 frames deep; the script
// runs it natively and under the shim, alternating, and compares the medians.
//
//   alloc_pairs pairs  --api async|plain [--chain D] [--blocks B] [--per-block N] [--warmup W] [--size BYTES]
//   alloc_pairs parts  [--chain D]        native cost of what the shim adds per event
//
// Built twice by the script: `nvcc -cudart shared` and plain nvcc (static
// runtime). One JSON line on stdout.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

static int opt_plain = 0;
static unsigned opt_chain = 18;
static unsigned opt_blocks = 21;
static unsigned opt_per_block = 0; // 0: by API
static unsigned opt_warmup = 0;    // 0: by API
static size_t opt_size = 1 << 20;
static cudaStream_t stream;

static uint64_t now_ns()
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void must(cudaError_t r, const char *what)
{
    if (r != cudaSuccess) {
        fprintf(stderr, "alloc_pairs: %s: %s\n", what, cudaGetErrorString(r));
        exit(1);
    }
}

// Under `perf record -D -1 --control fifo:CTL,ACK` (profile_async_pair.sh),
// CMT_PERF_CTL and CMT_PERF_ACK name those fifos: the samples are then taken
// in the timed blocks only, not in start-up or the synchronisations.
static int perf_ctl = -1, perf_ack = -1;

static void perf_control(const char *command)
{
    if (perf_ctl < 0)
        return;
    char ack[16];
    if (write(perf_ctl, command, strlen(command)) < 0 || read(perf_ack, ack, sizeof ack) <= 0) {
        fprintf(stderr, "alloc_pairs: perf control '%s' failed\n", command);
        exit(1);
    }
}

static void perf_control_open()
{
    const char *ctl = getenv("CMT_PERF_CTL"), *ack = getenv("CMT_PERF_ACK");
    if (!ctl || !ack)
        return;
    perf_ctl = open(ctl, O_WRONLY);
    perf_ack = open(ack, O_RDONLY);
    if (perf_ctl < 0 || perf_ack < 0) {
        fprintf(stderr, "alloc_pairs: cannot open the perf control fifos %s, %s\n", ctl, ack);
        exit(1);
    }
}

static inline void one_pair()
{
    void *p;
    if (opt_plain) {
        must(cudaMalloc(&p, opt_size), "cudaMalloc");
        must(cudaFree(p), "cudaFree");
    } else {
        must(cudaMallocAsync(&p, opt_size, stream), "cudaMallocAsync");
        must(cudaFreeAsync(p, stream), "cudaFreeAsync");
    }
}

static double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The timed loop, at the bottom of the chain.
__attribute__((noinline)) static void pairs_loop()
{
    unsigned per_block = opt_per_block ? opt_per_block : (opt_plain ? 40 : 2000);
    unsigned warmup = opt_warmup ? opt_warmup : (opt_plain ? 20 : 4000);
    for (unsigned i = 0; i < warmup; i++)
        one_pair();
    must(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    std::vector<double> blocks;
    double total_ns = 0;
    for (unsigned b = 0; b < opt_blocks; b++) {
        perf_control("enable\n");
        uint64_t t0 = now_ns();
        for (unsigned i = 0; i < per_block; i++)
            one_pair();
        uint64_t t1 = now_ns();
        perf_control("disable\n");
        blocks.push_back((double)(t1 - t0) / per_block);
        total_ns += (double)(t1 - t0);
        // Outside the timed region: the stream-ordered frees complete.
        must(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    }
    printf("{\"api\": \"%s\", \"pairs_per_block\": %u, \"blocks\": %u, \"size\": %zu, \"chain\": %u, "
           "\"median_ns_per_pair\": %.1f, \"mean_ns_per_pair\": %.1f, \"min_ns_per_pair\": %.1f, "
           "\"max_ns_per_pair\": %.1f}\n",
           opt_plain ? "plain" : "async", per_block, opt_blocks, opt_size, opt_chain, median(blocks),
           total_ns / ((double)per_block * opt_blocks),
           *std::min_element(blocks.begin(), blocks.end()), *std::max_element(blocks.begin(), blocks.end()));
}

// What the shim adds to an event, each measured natively here.
typedef int (*unw_backtrace_fn)(void **, int);

__attribute__((noinline)) static void parts_loop()
{
    const int n = 200000;
    int device = 0;
    uint64_t sink = 0;
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++)
        sink += now_ns();
    double clock_ns = (double)(now_ns() - t0) / n;
    // The shim's event clock reads the TSC instead (preload/clock.h): one
    // unordered rdtsc, plus a few instructions of conversion.
    double rdtsc_ns = -1;
#if defined(__x86_64__)
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        unsigned lo, hi;
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
        sink += ((uint64_t)hi << 32) | lo;
    }
    rdtsc_ns = (double)(now_ns() - t0) / n;
#endif
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        cudaGetDevice(&device);
        sink += device;
    }
    double get_device_ns = (double)(now_ns() - t0) / n;
    CUdevice cu_device = 0;
    t0 = now_ns();
    for (int i = 0; i < n; i++) {
        cuCtxGetDevice(&cu_device);
        sink += cu_device;
    }
    double ctx_get_device_ns = (double)(now_ns() - t0) / n;
    double backtrace_ns = -1;
    int frames = 0;
    void *unwind = dlopen("libunwind.so.8", RTLD_NOW);
    unw_backtrace_fn backtrace = unwind ? (unw_backtrace_fn)dlsym(unwind, "unw_backtrace") : nullptr;
    if (backtrace) {
        void *ips[64];
        const int m = 20000;
        for (int i = 0; i < 1000; i++)
            frames = backtrace(ips, 64);
        t0 = now_ns();
        for (int i = 0; i < m; i++)
            frames = backtrace(ips, 64);
        backtrace_ns = (double)(now_ns() - t0) / m;
    }
    printf("{\"clock_gettime_ns\": %.1f, \"rdtsc_ns\": %.1f, \"cudaGetDevice_ns\": %.1f, \"cuCtxGetDevice_ns\": %.1f, "
           "\"unw_backtrace_ns\": %.1f, \"unw_backtrace_frames\": %d, \"sink\": %llu}\n",
           clock_ns, rdtsc_ns, get_device_ns, ctx_get_device_ns, backtrace_ns, frames, (unsigned long long)(sink & 1));
}

// volatile depth and the work after the call keep each level a real frame.
__attribute__((noinline)) static int descend(volatile unsigned depth, void (*bottom)())
{
    if (depth == 0) {
        bottom();
        return 0;
    }
    int v = descend(depth - 1, bottom);
    __asm__ volatile("" ::: "memory");
    return v + 1;
}

static unsigned long number(const char *s, const char *what)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (!*s || *end) {
        fprintf(stderr, "alloc_pairs: %s wants a number, not '%s'\n", what, s);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "pairs") && strcmp(argv[1], "parts"))) {
        fprintf(stderr, "usage: alloc_pairs pairs|parts [--api async|plain] [--chain D] [--blocks B] "
                        "[--per-block N] [--warmup W] [--size BYTES]\n");
        return 2;
    }
    bool parts = !strcmp(argv[1], "parts");
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(a, "--api") && (!strcmp(v, "async") || !strcmp(v, "plain")))
            opt_plain = !strcmp(v, "plain"), i++;
        else if (!strcmp(a, "--chain"))
            opt_chain = (unsigned)number(v, a), i++;
        else if (!strcmp(a, "--blocks"))
            opt_blocks = (unsigned)number(v, a), i++;
        else if (!strcmp(a, "--per-block"))
            opt_per_block = (unsigned)number(v, a), i++;
        else if (!strcmp(a, "--warmup"))
            opt_warmup = (unsigned)number(v, a), i++;
        else if (!strcmp(a, "--size"))
            opt_size = number(v, a), i++;
        else {
            fprintf(stderr, "alloc_pairs: unknown option %s\n", a);
            return 2;
        }
    }
    if (opt_blocks == 0) {
        fprintf(stderr, "alloc_pairs: --blocks must be at least 1\n");
        return 2;
    }
    perf_control_open();
    must(cudaSetDevice(0), "cudaSetDevice");
    must(cudaFree(0), "cudaFree(0)");
    must(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    // The pool keeps what it reserved across synchronisations: every pair
    // after the first is served from it, as in a steady-state program.
    cudaMemPool_t pool;
    must(cudaDeviceGetDefaultMemPool(&pool, 0), "cudaDeviceGetDefaultMemPool");
    uint64_t threshold = UINT64_MAX;
    must(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold), "cudaMemPoolSetAttribute");
    descend(opt_chain, parts ? parts_loop : pairs_loop);
    must(cudaStreamDestroy(stream), "cudaStreamDestroy");
    return 0;
}
