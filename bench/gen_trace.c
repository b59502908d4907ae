/* SPDX-License-Identifier: MIT */
/* bench_gen_trace OUT EVENTS [--threads N] [--stacks N] [--seed S]
 *
 * Writes a synthetic trace shaped like a long training job: a few hundred
 * long-lived buffers (weights) allocated at start-up, then per thread an
 * iteration loop whose activations pile up and are released (a sawtooth with
 * peaks), stream-ordered pool allocations that come and go quickly, pinned
 * host staging buffers, a slow leak at one call site and an occasional failed
 * allocation. Stacks are 10-40 frames deep, drawn from a call tree over a
 * handful of modules so that prefixes are shared the way real programs share
 * them; sizes are log-uniform from 512 B to 64 MiB, rounded to 512 B. Freed
 * addresses are reused, as allocators do. The workload is stationary: the
 * number of live allocations does not grow with EVENTS (except the leak, one
 * allocation per 100,000 events), so the analyzer's memory must not either.
 *
 * With --rank R the trace is rank R's of a simulated Slurm job (the job at
 * scale of docs/performance.md): a JOB record (rank, local rank, world
 * size, job id, CUDA_VISIBLE_DEVICES naming its one GPU), its host
 * node%04u (R / --ranks-per-host), pid 10000 + R, a start 37 us later per
 * rank, and seed + R as its seed.
 *
 * Everything is deterministic for a given seed. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MAX_THREADS 256
#define N_MODULES 6
#define FUNCS_PER_MODULE 600

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* xorshift64*: fast, deterministic, good enough for workloads. */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static uint64_t rnd_below(uint64_t n)
{
    return n ? rnd() % n : 0;
}

struct live_alloc {
    uint64_t addr;
    uint64_t size;
    uint8_t kind;
};

struct thread_state {
    uint32_t tid;
    struct live_alloc *live;
    size_t n_live, cap_live;
    size_t target; /* live allocations this iteration builds up to */
    bool releasing;
    uint64_t next_addr;
    uint64_t *free_addrs;
    size_t n_free, cap_free;
    uint64_t iteration;
};

static uint32_t *stacks;
static size_t n_stacks;

static const uint64_t module_base[N_MODULES] = {0x555555554000ull, 0x7f1000000000ull, 0x7f2000000000ull,
                                                0x7f3000000000ull, 0x7f4000000000ull, 0x7f5000000000ull};
static const char *const module_path[N_MODULES] = {
    "/opt/train/bin/train", "/opt/train/lib/libmodel.so", "/usr/lib/libtorch_cuda.so",
    "/usr/lib/libc10_cuda.so", "/usr/local/cuda/lib64/libcudart.so.13", "/usr/lib/x86_64-linux-gnu/libc.so.6"};

static uint64_t function_address(unsigned module, unsigned fn)
{
    return module_base[module] + 0x1000 + (uint64_t)fn * 0x240 + 0x17;
}

/* A stack: main at the bottom, then a walk down a call tree whose branching
 * narrows with depth, so that many stacks share their outer frames. */
static uint32_t make_stack(struct cmt_trace_builder *b, unsigned index)
{
    uint64_t frames[64];
    unsigned depth = 10 + (unsigned)rnd_below(31);
    uint64_t path = index;
    /* outermost first, reversed below */
    for (unsigned d = 0; d < depth; d++) {
        unsigned module = d < 3 ? 0 : d < depth - 4 ? 1 + (unsigned)((path + d) % 3) : 4;
        unsigned fanout = d < 4 ? 2 : d < 12 ? 4 : 8;
        unsigned fn = (unsigned)((path % fanout + d * 37u + (path >> 7) % 11) % FUNCS_PER_MODULE);
        path /= fanout > 1 && d % 2 ? 2 : 1;
        path = path * 31 + d;
        frames[depth - 1 - d] = function_address(module, fn) + (uint64_t)(index % 5) * 8;
    }
    return cmt_tb_stack(b, frames, depth);
}

static uint64_t draw_size(void)
{
    /* log-uniform in [2^9, 2^26] */
    unsigned exp = 9 + (unsigned)rnd_below(17);
    uint64_t lo = 1ull << exp;
    uint64_t s = lo + rnd_below(lo);
    return (s + 511) & ~511ull;
}

static uint64_t take_address(struct thread_state *t)
{
    if (t->n_free)
        return t->free_addrs[--t->n_free];
    uint64_t a = t->next_addr;
    t->next_addr += 1ull << 20;
    return a;
}

static void give_address(struct thread_state *t, uint64_t a)
{
    if (t->n_free == t->cap_free) {
        t->cap_free = t->cap_free ? t->cap_free * 2 : 1024;
        t->free_addrs = realloc(t->free_addrs, t->cap_free * sizeof *t->free_addrs);
        if (!t->free_addrs)
            abort();
    }
    t->free_addrs[t->n_free++] = a;
}

static void push_live(struct thread_state *t, struct live_alloc a)
{
    if (t->n_live == t->cap_live) {
        t->cap_live = t->cap_live ? t->cap_live * 2 : 1024;
        t->live = realloc(t->live, t->cap_live * sizeof *t->live);
        if (!t->live)
            abort();
    }
    t->live[t->n_live++] = a;
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_gen_trace OUT EVENTS [--threads N] [--stacks N] [--seed S]\n"
                    "                       [--rank R --world N [--ranks-per-host K] [--job ID]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *out = argv[1];
    uint64_t events = strtoull(argv[2], NULL, 10);
    unsigned n_threads = 8;
    unsigned want_stacks = 4000;
    uint64_t seed = 42;
    long rank = -1, world = 0, per_host = 8;
    const char *job_id = "slurm:9000.0";
    for (int i = 3; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--rank"))
            rank = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--world"))
            world = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--ranks-per-host"))
            per_host = strtol(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--job"))
            job_id = argv[i + 1];
        else if (!strcmp(argv[i], "--threads"))
            n_threads = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--stacks"))
            want_stacks = (unsigned)strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
        else
            return usage();
    }
    if (events == 0 || n_threads == 0 || n_threads > MAX_THREADS || want_stacks < 16 ||
        (rank >= 0 && (world <= rank || per_host <= 0)))
        return usage();
    if (rank >= 0)
        seed += (uint64_t)rank;
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;

    const uint64_t start = 1000000000000ull;
    uint32_t pid = rank >= 0 ? 10000 + (uint32_t)rank : 4242;
    struct cmt_trace_builder_options opt = {
        .pid = pid, .start_monotonic_ns = start,
        .start_realtime_ns = 1767225600ull * 1000000000ull + (rank >= 0 ? (uint64_t)rank * 37000 : 0),
        .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(out, &opt);
    if (!b) {
        fprintf(stderr, "bench_gen_trace: cannot create %s: %s\n", out, strerror(errno));
        return 1;
    }
    const char *args[] = {"/opt/train/bin/train", "--epochs", "100"};
    char host[32] = "benchhost", cvd[24];
    if (rank >= 0)
        snprintf(host, sizeof host, "node%04ld", rank / per_host);
    cmt_tb_process(b, pid, 1, args[0], 3, args, host, rank, "/opt/train");
    if (rank >= 0) {
        snprintf(cvd, sizeof cvd, "%ld", rank % per_host);
        const char *names[] = {"CUDA_VISIBLE_DEVICES"}, *values[] = {cvd};
        struct cmt_tb_job_desc j = {.ts = start, .source = CMT_JOB_SLURM, .rank = rank, .local_rank = rank % per_host,
                                    .world_size = world, .local_world_size = per_host, .job_id = job_id,
                                    .nvars = 1, .names = names, .values = values};
        cmt_tb_job(b, &j);
    }
    for (unsigned m = 0; m < N_MODULES; m++) {
        uint8_t build_id[20];
        for (unsigned k = 0; k < sizeof build_id; k++)
            build_id[k] = (uint8_t)(m * 31 + k);
        cmt_tb_module(b, module_path[m], module_base[m], module_base[m], module_base[m] + 0x100000, build_id,
                      sizeof build_id);
    }
    cmt_tb_device(b, 0, "Synthetic GPU", 80ull << 30);
    stacks = calloc(want_stacks, sizeof *stacks);
    if (!stacks)
        return 1;
    for (unsigned i = 0; i < want_stacks; i++)
        stacks[n_stacks++] = make_stack(b, i);

    struct thread_state *threads = calloc(n_threads, sizeof *threads);
    if (!threads)
        return 1;
    for (unsigned i = 0; i < n_threads; i++) {
        threads[i].tid = 5000 + i;
        threads[i].next_addr = 0x7e0000000000ull + ((uint64_t)i << 36);
        threads[i].target = 200 + rnd_below(1800);
        char name[32];
        snprintf(name, sizeof name, "worker-%u", i);
        cmt_tb_thread(b, threads[i].tid, name);
    }

    uint64_t ts = start + 1000;
    uint64_t written = 0;
    /* Start-up: long-lived buffers from a few call sites, on thread 0. */
    for (unsigned i = 0; i < 300 && written < events; i++, written++) {
        struct thread_state *t = &threads[0];
        struct cmt_event e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                              .has_device = true, .device = 0, .ts = ts, .addr = take_address(t),
                              .size = draw_size(), .stack = stacks[i % 8]};
        ts += 500 + rnd_below(1000);
        if (cmt_tb_event(b, t->tid, &e) != 0)
            return 1;
    }
    const uint32_t leak_stack = stacks[n_stacks - 1];
    while (written < events) {
        struct thread_state *t = &threads[rnd_below(n_threads)];
        /* A burst of events of one thread, as a thread runs for a while. */
        unsigned burst = 1 + (unsigned)rnd_below(16);
        for (unsigned k = 0; k < burst && written < events; k++, written++) {
            ts += rnd_below(1200); /* about 0.6 us apart on average */
            struct cmt_event e = {.has_device = true, .device = 0, .ts = ts};
            if (written % 100000 == 99999) {
                e.type = CMT_REC_ALLOC;
                e.api = CMT_API_CUDA_MALLOC;
                e.kind = CMT_KIND_DEVICE;
                e.addr = take_address(t);
                e.size = 1 << 20;
                e.stack = leak_stack;
            } else if (written % 250000 == 7) {
                e.type = CMT_REC_ALLOC;
                e.api = CMT_API_CUDA_MALLOC;
                e.kind = CMT_KIND_DEVICE;
                e.size = 96ull << 30;
                e.result = 2; /* cudaErrorMemoryAllocation */
                e.stack = stacks[rnd_below(n_stacks)];
            } else if (!t->releasing && t->n_live < t->target) {
                unsigned r = (unsigned)rnd_below(100);
                e.type = CMT_REC_ALLOC;
                if (r < 60) {
                    e.api = CMT_API_CUDA_MALLOC_ASYNC;
                    e.kind = CMT_KIND_ASYNC;
                    e.stream = 0x5000 + t->tid;
                } else if (r < 95) {
                    e.api = CMT_API_CUDA_MALLOC;
                    e.kind = CMT_KIND_DEVICE;
                } else {
                    e.api = CMT_API_CUDA_HOST_ALLOC;
                    e.kind = CMT_KIND_HOST_PINNED;
                    e.has_device = false;
                }
                e.addr = take_address(t);
                e.size = draw_size();
                /* Stacks are reached unevenly: hot paths dominate. */
                uint64_t pick = rnd_below(n_stacks);
                e.stack = stacks[rnd_below(4) ? pick % (n_stacks / 8 + 1) : pick];
                push_live(t, (struct live_alloc){e.addr, e.size, e.kind});
            } else {
                /* n_live > 0 here: a target is at least 200 and releasing
                 * stops at an eighth of it. */
                t->releasing = true;
                /* Mostly last-in first-out, sometimes from anywhere. */
                size_t i = rnd_below(4) ? t->n_live - 1 : rnd_below(t->n_live);
                struct live_alloc a = t->live[i];
                t->live[i] = t->live[--t->n_live];
                e.type = CMT_REC_FREE;
                e.api = a.kind == CMT_KIND_ASYNC ? CMT_API_CUDA_FREE_ASYNC
                        : a.kind == CMT_KIND_HOST_PINNED ? CMT_API_CUDA_FREE_HOST
                                                          : CMT_API_CUDA_FREE;
                e.kind = cmt_api_default_kind(e.api);
                e.has_device = false;
                e.addr = a.addr;
                if (a.kind == CMT_KIND_ASYNC)
                    e.stream = 0x5000 + t->tid;
                give_address(t, a.addr);
                if (t->n_live <= t->target / 8) {
                    t->releasing = false;
                    t->iteration++;
                    t->target = 200 + rnd_below(1800);
                }
            }
            if (cmt_tb_event(b, t->tid, &e) != 0) {
                fprintf(stderr, "bench_gen_trace: write failed: %s\n", strerror(errno));
                return 1;
            }
        }
    }
    cmt_tb_end(b, ts + 1000, CMT_END_EXIT);
    uint64_t size = cmt_tb_size(b);
    if (cmt_tb_close(b) != 0) {
        fprintf(stderr, "bench_gen_trace: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    printf("%s: %" PRIu64 " events, %zu stacks, %u threads, %" PRIu64 " bytes\n", out, written, n_stacks,
           n_threads, size);
    for (unsigned i = 0; i < n_threads; i++) {
        free(threads[i].live);
        free(threads[i].free_addrs);
    }
    free(threads);
    free(stacks);
    return 0;
}
