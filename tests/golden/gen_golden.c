/* SPDX-License-Identifier: MIT */
/* gen_golden DIR: writes the deterministic traces the golden tests analyse.
 *
 * Every byte is fixed: start times, pids, thread ids, timestamps, addresses,
 * and stacks made of synthetic frames (FRAME records naming a function, a
 * file and a line), so reports carry function names and file:line without
 * any binary to symbolize and are identical on every machine.
 *
 *   mixed.bin      one process, two threads, devices 0 and 1: start-up
 *                  weights kept for good (two call sites, once each), 100 training iterations of
 *                  stream-ordered activations, a scratch buffer, a cache that
 *                  leaks 1 MiB per iteration, VMM physical memory, pinned
 *                  and managed memory, one failed allocation.
 *   rank0.bin ..   three ranks of one job, rank 2 heavier and leaking more.
 *   rank2.bin
 *   frag.bin       one device of 16 GiB with device samples and pool records
 *                  among 1200 iterations of size churn, a pool, pinned
 *                  blocks whose neighbours are released later (holes), a
 *                  pitched allocation, a pool trim, another process taking
 *                  12 GiB and a failed allocation it explains.
 *   small.bin      a run of 23.6 ms, the figures of which docs/report.md
 *                  works out by hand: 31 holes of 1 MiB between 32 live
 *                  blocks, 2000 short-lived cudaMalloc/cudaFree pairs at one
 *                  site, a ping-pong pair that is not short-lived, a loader
 *                  thread whose buffers the main thread frees, a pool whose
 *                  reserve the samples see only in part.
 *   old.bin        two runs of one program (the second with more steps), and
 *   new.bin        a run of another program, for cumemtrace diff.
 *   other.bin
 *   near.bin       two failed allocations 300 ns apart, 3 hours into the
 *                  run (the Perfetto export's timestamps to the ns).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)
#define MS 1000000ull
#define START 5000000000000ull           /* monotonic ns at trace creation */
#define REALTIME 1767225600000000000ull  /* 2026-01-01 00:00:00 UTC */

static struct cmt_trace_builder *b;
static uint64_t f_main, f_train, f_step, f_weights, f_embed, f_forward, f_backward, f_cache, f_scratch, f_staging,
    f_managed, f_vmm, f_worker, f_prefetch, f_cuda_malloc, f_huge;

static void fail(const char *what)
{
    fprintf(stderr, "gen_golden: %s: %s\n", what, strerror(errno));
    exit(1);
}

static uint32_t stack(int n, ...)
{
    /* arguments innermost first */
    uint64_t frames[16];
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++)
        frames[i] = va_arg(ap, uint64_t);
    va_end(ap);
    return cmt_tb_stack(b, frames, (uint32_t)n);
}

static void event(uint32_t tid, uint8_t type, uint8_t api, int32_t device, uint64_t ts, uint64_t addr,
                  uint64_t size, uint32_t stk, int32_t result)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = device != INT32_MIN,
        .device = device,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .stack = stk,
        .result = result,
        .stream = api == CMT_API_CUDA_MALLOC_ASYNC || api == CMT_API_CUDA_FREE_ASYNC ? 0x5100 : 0,
    };
    if (cmt_tb_event(b, tid, &e) != 0)
        fail("event");
}

/* A phase record (trace-format.md, "Marks"): api MARK_PUSH/POP, a name. */
static void mark(uint32_t tid, uint8_t api, uint64_t ts, const char *name)
{
    struct cmt_event e = {
        .type = CMT_REC_MARK,
        .api = api,
        .kind = CMT_KIND_DEVICE,
        .ts = START + ts,
        .aux = {name ? cmt_tb_string(b, name) : 0},
    };
    if (cmt_tb_event(b, tid, &e) != 0)
        fail("mark");
}

#define ALLOC(tid, api, dev, ts, addr, size, stk) event(tid, CMT_REC_ALLOC, api, dev, ts, addr, size, stk, 0)
#define FREE(tid, api, ts, addr) event(tid, CMT_REC_FREE, api, INT32_MIN, ts, addr, 0, 0, 0)

static void open_trace_as(const char *dir, const char *name, uint32_t pid, int64_t rank, int argc,
                          const char **argv, uint64_t realtime)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct cmt_trace_builder_options opt = {
        .pid = pid, .start_monotonic_ns = START, .start_realtime_ns = realtime, .clean_exit = true};
    b = cmt_tb_create(path, &opt);
    if (!b)
        fail(path);
    cmt_tb_process(b, pid, 1, argv[0], argc, argv, "goldenhost", rank, "/opt/app");
    cmt_tb_device(b, 0, "Golden GPU", 80 * GiB);
    cmt_tb_device(b, 1, "Golden GPU", 80 * GiB);
    cmt_tb_thread(b, 101, "main");
    cmt_tb_note(b, START + 1000, CMT_NOTE_PYTHON, "Python 3.99 is not a version the shim knows: native frames only");
    f_main = cmt_tb_frame(b, "main", "/src/app/main.c", 40);
    f_train = cmt_tb_frame(b, "train", "/src/app/train.c", 120);
    f_step = cmt_tb_frame(b, "train_step", "/src/app/train.c", 88);
    f_weights = cmt_tb_frame(b, "load_weights", "/src/app/model.c", 31);
    f_embed = cmt_tb_frame(b, "load_embeddings", "/src/app/model.c", 40);
    f_forward = cmt_tb_frame(b, "forward", "/src/app/model.c", 57);
    f_backward = cmt_tb_frame(b, "backward", "/src/app/model.c", 73);
    f_cache = cmt_tb_frame(b, "remember_batch", "/src/app/cache.c", 19);
    f_scratch = cmt_tb_frame(b, "workspace", "/src/app/kernels.c", 12);
    f_staging = cmt_tb_frame(b, "staging_buffer", "/src/app/io.c", 44);
    f_managed = cmt_tb_frame(b, "shared_table", "/src/app/io.c", 61);
    f_vmm = cmt_tb_frame(b, "grow_arena", "/src/app/arena.c", 27);
    f_worker = cmt_tb_frame(b, "worker_main", "/src/app/worker.c", 15);
    f_prefetch = cmt_tb_frame(b, "prefetch_shard", "/src/app/worker.c", 33);
    f_huge = cmt_tb_frame(b, "try_huge_batch", "/src/app/train.c", 140);
    /* cudaMalloc as a frame of its own: the default fold rules hide it */
    f_cuda_malloc = cmt_tb_frame(b, "cudaMalloc", "", 0);
}

static void open_trace(const char *dir, const char *name, uint32_t pid, int64_t rank)
{
    const char *argv[] = {"/opt/app/train", "--steps", "100"};
    open_trace_as(dir, name, pid, rank, 3, argv, REALTIME);
}

static void close_trace(uint64_t end_ms)
{
    cmt_tb_end(b, START + end_ms * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

static void mixed(const char *dir)
{
    open_trace(dir, "mixed.bin", 1000, -1);
    cmt_tb_thread(b, 102, "loader");
    uint32_t s_weights = stack(4, f_cuda_malloc, f_weights, f_train, f_main);
    uint32_t s_embed = stack(4, f_cuda_malloc, f_embed, f_train, f_main);
    uint32_t s_forward = stack(3, f_forward, f_step, f_train);
    uint32_t s_forward_main = stack(4, f_forward, f_step, f_train, f_main);
    uint32_t s_backward = stack(4, f_backward, f_step, f_train, f_main);
    uint32_t s_cache = stack(5, f_cuda_malloc, f_cache, f_step, f_train, f_main);
    uint32_t s_scratch = stack(5, f_cuda_malloc, f_scratch, f_backward, f_step, f_train);
    uint32_t s_staging = stack(3, f_staging, f_train, f_main);
    uint32_t s_managed = stack(3, f_managed, f_train, f_main);
    uint32_t s_vmm = stack(3, f_vmm, f_train, f_main);
    uint32_t s_worker = stack(2, f_prefetch, f_worker);
    uint32_t s_huge = stack(4, f_cuda_malloc, f_huge, f_train, f_main);

    const uint64_t weights = 0x7f0000000000ull, acts = 0x7f1000000000ull, cache = 0x7f2000000000ull,
                   scratch = 0x7f3000000000ull, pinned = 0x7f4000000000ull, managed = 0x7f5000000000ull,
                   dev1 = 0x7f6000000000ull;
    /* start-up */
    ALLOC(101, CMT_API_CUDA_MALLOC, 0, 1 * MS, weights, 256 * MiB, s_weights);
    ALLOC(101, CMT_API_CUDA_MALLOC, 0, 2 * MS, weights + 256 * MiB, 128 * MiB, s_embed);
    ALLOC(101, CMT_API_CU_MEM_CREATE, 0, 3 * MS, 0x10, 64 * MiB, s_vmm);
    ALLOC(101, CMT_API_CUDA_HOST_ALLOC, -1, 4 * MS, pinned, 16 * MiB, s_staging);
    ALLOC(101, CMT_API_CUDA_MALLOC_MANAGED, 0, 5 * MS, managed, 8 * MiB, s_managed);
    /* the loader thread works on device 1 */
    for (int i = 0; i < 3; i++)
        ALLOC(102, CMT_API_CUDA_MALLOC, 1, (6 + i) * MS, dev1 + (uint64_t)i * 64 * MiB, 10 * MiB, s_worker);
    /* 100 steps of 20 ms from 10 ms on */
    for (uint64_t step = 0; step < 100; step++) {
        uint64_t t = 10 * MS + step * 20 * MS;
        /* phases (docs/report.md, "Phases and steps"): step N > forward, then backward */
        char step_name[32];
        snprintf(step_name, sizeof step_name, "step %" PRIu64, step);
        mark(101, CMT_API_MARK_PUSH, t, step_name);
        mark(101, CMT_API_MARK_PUSH, t, "forward");
        for (uint64_t k = 0; k < 4; k++)
            ALLOC(101, CMT_API_CUDA_MALLOC_ASYNC, 0, t + k * MS, acts + k * 16 * MiB, 8 * MiB,
                  k < 2 ? s_forward : s_forward_main);
        mark(101, CMT_API_MARK_POP, t + 4 * MS, NULL);
        mark(101, CMT_API_MARK_PUSH, t + 5 * MS, "backward");
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, t + 5 * MS, cache + step * 2 * MiB, 1 * MiB, s_cache);
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, t + 6 * MS, scratch, 32 * MiB, s_scratch);
        if (step == 50)
            event(101, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, t + 7 * MS, 0, 100 * GiB, s_huge, 2);
        FREE(101, CMT_API_CUDA_FREE, t + 8 * MS, scratch);
        mark(101, CMT_API_MARK_POP, t + 9 * MS, NULL);
        for (uint64_t k = 4; k-- > 0;)
            FREE(101, CMT_API_CUDA_FREE_ASYNC, t + 10 * MS + (3 - k) * MS, acts + k * 16 * MiB);
        /* one backward activation that lives across a step boundary */
        if (step % 25 == 0)
            ALLOC(101, CMT_API_CUDA_MALLOC_ASYNC, 0, t + 15 * MS, acts + 4 * 16 * MiB, 24 * MiB, s_backward);
        if (step % 25 == 1)
            FREE(101, CMT_API_CUDA_FREE_ASYNC, t + 15 * MS, acts + 4 * 16 * MiB);
        mark(101, CMT_API_MARK_POP, t + 19 * MS, NULL);
    }
    /* the loader frees its buffers late */
    for (int i = 0; i < 3; i++)
        FREE(102, CMT_API_CUDA_FREE, (2015 + (uint64_t)i) * MS, dev1 + (uint64_t)i * 64 * MiB);
    FREE(101, CMT_API_CUDA_FREE_HOST, 2020 * MS, pinned);
    FREE(101, CMT_API_CUDA_FREE, 2021 * MS, managed);
    FREE(101, CMT_API_CU_MEM_RELEASE, 2022 * MS, 0x10);
    close_trace(2030);
}

/* Rank r: weights of (1 + r) GiB, 10 steps of activations, a leak of
 * (r + 1) x 2 MiB, on device r. */
static void rank(const char *dir, int r)
{
    char name[32];
    snprintf(name, sizeof name, "rank%d.bin", r);
    open_trace(dir, name, 2000 + (uint32_t)r, r);
    char rank_text[8];
    snprintf(rank_text, sizeof rank_text, "%d", r);
    const char *names[] = {"RANK", "LOCAL_RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "CUDA_VISIBLE_DEVICES"};
    const char *values[] = {rank_text, rank_text, "3", "golden", "0,1,2"};
    struct cmt_tb_job_desc job = {START + 2000, CMT_JOB_TORCH, r, r, 3, 3, "torchelastic:golden", 5, names, values};
    cmt_tb_job(b, &job);
    uint32_t s_weights = stack(4, f_cuda_malloc, f_weights, f_train, f_main);
    uint32_t s_forward = stack(4, f_forward, f_step, f_train, f_main);
    uint32_t s_cache = stack(5, f_cuda_malloc, f_cache, f_step, f_train, f_main);
    const uint64_t base = 0x7f0000000000ull + ((uint64_t)r << 40);
    ALLOC(101, CMT_API_CUDA_MALLOC, r, 1 * MS, base, (1 + (uint64_t)r) * GiB, s_weights);
    for (uint64_t step = 0; step < 10; step++) {
        uint64_t t = 10 * MS + step * 10 * MS;
        ALLOC(101, CMT_API_CUDA_MALLOC_ASYNC, r, t, base + 8 * GiB, 512 * MiB, s_forward);
        if ((uint64_t)r >= step % 3)
            ALLOC(101, CMT_API_CUDA_MALLOC, r, t + 1 * MS, base + 16 * GiB + step * 4 * MiB, 2 * MiB, s_cache);
        FREE(101, CMT_API_CUDA_FREE_ASYNC, t + 5 * MS, base + 8 * GiB);
    }
    FREE(101, CMT_API_CUDA_FREE, 200 * MS, base);
    close_trace(210);
}

/* A sample or pool record: aux carries the figures (trace-format.md). */
static void record(uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stk,
                   uint64_t aux0, uint64_t aux1, uint64_t aux2, uint64_t aux3)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = true,
        .device = 0,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .stack = stk,
        .aux = {aux0, aux1, aux2, aux3},
    };
    if (cmt_tb_event(b, 101, &e) != 0)
        fail("record");
}

/* frag.bin's device: what the shim would read from cuMemGetInfo and the
 * pools at each sample. */
struct frag_device {
    uint64_t live;          /* this process's device-resident bytes */
    uint64_t pool_reserved; /* the created pool's */
    uint64_t pool_used;
    uint64_t other;         /* another process's */
};

#define FRAG_TOTAL (16 * GiB)
#define FRAG_CONTEXT (512 * MiB)
#define FRAG_POOL 0x5a00ull
#define FRAG_DEFAULT_POOL 0x5b00ull

static void frag_sample(const struct frag_device *d, uint8_t api, uint64_t ts, uint64_t request)
{
    uint64_t used = FRAG_CONTEXT + d->live + (d->pool_reserved - d->pool_used) + d->other;
    record(CMT_REC_SAMPLE, api, ts, 0, request, 0, FRAG_TOTAL - used, FRAG_TOTAL, d->pool_reserved, d->pool_used);
    record(CMT_REC_POOL, CMT_API_POOL_STATE, ts + 1000, FRAG_DEFAULT_POOL, 0, 0, 0, 0, 0, 3);
    record(CMT_REC_POOL, CMT_API_POOL_STATE, ts + 2000, FRAG_POOL, 0, 0, d->pool_reserved, d->pool_used,
           UINT64_MAX, 0);
}

#define US 1000ull

static void frag(const char *dir)
{
    open_trace(dir, "frag.bin", 3000, -1);
    uint64_t f_resize = cmt_tb_frame(b, "resize_buffer", "/src/app/batch.c", 21);
    uint64_t f_stage = cmt_tb_frame(b, "stage_input", "/src/app/io.c", 80);
    uint64_t f_image = cmt_tb_frame(b, "make_image", "/src/app/image.c", 12);
    uint64_t f_pool = cmt_tb_frame(b, "make_pool", "/src/app/pool.c", 9);
    uint64_t f_trim = cmt_tb_frame(b, "trim_cache", "/src/app/pool.c", 30);
    uint64_t f_shard = cmt_tb_frame(b, "load_shard", "/src/app/io.c", 95);
    uint32_t s_weights = stack(4, f_cuda_malloc, f_weights, f_train, f_main);
    uint32_t s_churn = stack(4, f_cuda_malloc, f_resize, f_step, f_train);
    uint32_t s_kept = stack(4, f_cuda_malloc, f_cache, f_step, f_train);
    uint32_t s_stage = stack(4, f_cuda_malloc, f_stage, f_step, f_train);
    uint32_t s_act = stack(3, f_forward, f_step, f_train);
    uint32_t s_image = stack(3, f_image, f_train, f_main);
    uint32_t s_pool = stack(3, f_pool, f_train, f_main);
    uint32_t s_trim = stack(3, f_trim, f_train, f_main);
    uint32_t s_shard = stack(4, f_cuda_malloc, f_shard, f_step, f_train);
    const uint64_t plain = 0x700000000000ull, pooled = 0x710000000000ull;
    const uint64_t churn_base = plain + 4 * GiB, kept_base = plain + 8 * GiB, image = plain + 12 * GiB;
    struct frag_device d = {0};

    ALLOC(101, CMT_API_CUDA_MALLOC, 0, 1 * MS, plain, 2 * GiB, s_weights);
    d.live += 2 * GiB;
    frag_sample(&d, CMT_API_SAMPLE_START, 1 * MS + 100 * US, 0);
    record(CMT_REC_POOL, CMT_API_POOL_CREATE, 2 * MS, FRAG_POOL, 0, s_pool, 0, 1, 0, 0);
    uint64_t pool_hi = 0; /* the pool's reserved bytes: its highest slot in use since the trim */
    for (uint64_t i = 0; i < 1200; i++) {
        uint64_t t = 10 * MS + i * MS;
        /* 37 sizes, each 256 B past a whole MiB, released half a millisecond later */
        uint64_t churn = (1 + i % 37) * MiB + 256;
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, t, churn_base + (i % 4) * 64 * MiB, churn, s_churn);
        d.live += churn;
        if (i % 3 == 0) {
            uint64_t slot = (i / 3) % 2;
            struct cmt_event e = {
                .type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_FROM_POOL_ASYNC, .kind = CMT_KIND_ASYNC,
                .has_device = true, .device = 0, .ts = START + t + 100 * US, .addr = pooled + slot * 32 * MiB,
                .size = 32 * MiB, .stack = s_act, .stream = 0x5100, .aux = {FRAG_POOL}};
            if (cmt_tb_event(b, 101, &e) != 0)
                fail("event");
            d.live += 32 * MiB;
            d.pool_used += 32 * MiB;
            if ((slot + 1) * 32 * MiB > pool_hi)
                pool_hi = (slot + 1) * 32 * MiB;
            d.pool_reserved = pool_hi;
        }
        if (i % 5 == 0) {
            /* a 1 MiB block kept for good, every 4 MiB; a 2 MiB staging
             * buffer right after it, released once the next block exists:
             * each release opens a 3 MiB hole the kept blocks pin */
            uint64_t k = i / 5, at = kept_base + k * 4 * MiB;
            ALLOC(101, CMT_API_CUDA_MALLOC, 0, t + 200 * US, at, 1 * MiB, s_kept);
            ALLOC(101, CMT_API_CUDA_MALLOC, 0, t + 250 * US, at + 1 * MiB, 2 * MiB, s_stage);
            d.live += 3 * MiB;
            if (k > 0) {
                FREE(101, CMT_API_CUDA_FREE, t + 300 * US, at - 3 * MiB);
                d.live -= 2 * MiB;
            }
        }
        if (i == 150) {
            /* 3000 x 1000 bytes asked for, rows of 4096 */
            struct cmt_event e = {
                .type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_PITCH, .kind = CMT_KIND_DEVICE,
                .has_device = true, .device = 0, .ts = START + t + 350 * US, .addr = image,
                .size = 4096 * 1000, .stack = s_image, .aux = {0, 3000 * 1000}};
            if (cmt_tb_event(b, 101, &e) != 0)
                fail("event");
            d.live += 4096 * 1000;
        }
        if (i == 450) {
            FREE(101, CMT_API_CUDA_FREE, t + 350 * US, image);
            d.live -= 4096 * 1000;
        }
        if (i == 600)
            d.other = 12 * GiB; /* another process starts */
        if (i % 10 == 0)
            frag_sample(&d, CMT_API_SAMPLE_PERIODIC, t + 400 * US, 0);
        FREE(101, CMT_API_CUDA_FREE, t + 500 * US, churn_base + (i % 4) * 64 * MiB);
        d.live -= churn;
        if (i == 1000) {
            event(101, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, t + 600 * US, 0, 3 * GiB, s_shard, 2);
            frag_sample(&d, CMT_API_SAMPLE_FAILURE, t + 610 * US, 3 * GiB);
        }
        if (i % 3 == 0) {
            FREE(101, CMT_API_CUDA_FREE_ASYNC, t + 800 * US, pooled + ((i / 3) % 2) * 32 * MiB);
            d.live -= 32 * MiB;
            d.pool_used -= 32 * MiB;
        }
        if (i == 200) {
            record(CMT_REC_POOL, CMT_API_POOL_TRIM, t + 900 * US, FRAG_POOL, 0, s_trim, 0, 0, 0, 0);
            pool_hi = 0;
            d.pool_reserved = 0;
            record(CMT_REC_POOL, CMT_API_POOL_STATE, t + 910 * US, FRAG_POOL, 0, 0, 0, 0, UINT64_MAX, 0);
        }
    }
    frag_sample(&d, CMT_API_SAMPLE_EXIT, 1300 * MS, 0);
    close_trace(1301);
}

#define KiB 1024ull

/* small.bin: every figure below is checked by hand in docs/report.md. */
static void small(const char *dir)
{
    const char *argv[] = {"/opt/app/tiles", "--tiles", "2000"};
    open_trace_as(dir, "small.bin", 4000, -1, 3, argv, REALTIME);
    cmt_tb_thread(b, 102, "loader");
    uint64_t f_table = cmt_tb_frame(b, "load_table", "/src/app/table.c", 12);
    uint64_t f_fill = cmt_tb_frame(b, "scratch_fill", "/src/app/table.c", 20);
    uint64_t f_tile = cmt_tb_frame(b, "upload_tile", "/src/app/tile.c", 14);
    uint64_t f_pingpong = cmt_tb_frame(b, "swap_buffers", "/src/app/tile.c", 30);
    uint64_t f_batch = cmt_tb_frame(b, "load_batch", "/src/app/loader.c", 22);
    uint64_t f_loader = cmt_tb_frame(b, "loader_main", "/src/app/loader.c", 8);
    uint64_t f_pool = cmt_tb_frame(b, "make_pool", "/src/app/pool.c", 9);
    uint64_t f_stage = cmt_tb_frame(b, "stage_tiles", "/src/app/tile.c", 44);
    uint32_t s_table = stack(3, f_cuda_malloc, f_table, f_main);
    uint32_t s_fill = stack(3, f_cuda_malloc, f_fill, f_main);
    uint32_t s_tile = stack(3, f_cuda_malloc, f_tile, f_main);
    uint32_t s_pingpong = stack(3, f_cuda_malloc, f_pingpong, f_main);
    uint32_t s_batch = stack(3, f_cuda_malloc, f_batch, f_loader);
    uint32_t s_pool = stack(2, f_pool, f_main);
    uint32_t s_stage = stack(2, f_stage, f_main);
    /* tiles, ping-pong buffers and batches in turn where the last scratch
     * block was: the span stays the table's */
    const uint64_t table = 0x700000000000ull, pooled = 0x710000000000ull;
    const uint64_t tiles = table + 63 * MiB, ping = tiles, batch = tiles;
    const uint64_t total = 16 * GiB, pool = 0x5a00;
    /* nothing in use yet: the first sample is all free */
    record(CMT_REC_SAMPLE, CMT_API_SAMPLE_START, 500 * US, 0, 0, 0, total, total, 0, 0);
    /* 32 table blocks of 1 MiB, each followed by a 1 MiB scratch block; the
     * scratch blocks go, leaving 31 holes of 1 MiB between the table blocks
     * (the last scratch block borders the end of the span, no hole) */
    for (uint64_t k = 0; k < 32; k++) {
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, 1 * MS + k * 20 * US, table + 2 * k * MiB, 1 * MiB, s_table);
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, 1 * MS + k * 20 * US + 10 * US, table + (2 * k + 1) * MiB, 1 * MiB,
              s_fill);
    }
    for (uint64_t k = 0; k < 32; k++)
        FREE(101, CMT_API_CUDA_FREE, 2 * MS + k * 10 * US, table + (2 * k + 1) * MiB);
    record(CMT_REC_POOL, CMT_API_POOL_CREATE, 2500 * US, pool, 0, s_pool, 0, 1, 0, 0);
    /* 2000 tiles of 256 KiB, each released before the next is allocated */
    for (uint64_t i = 0; i < 2000; i++) {
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, 3 * MS + i * 5 * US, tiles, 256 * KiB, s_tile);
        FREE(101, CMT_API_CUDA_FREE, 3 * MS + i * 5 * US + 2 * US, tiles);
    }
    record(CMT_REC_SAMPLE, CMT_API_SAMPLE_PERIODIC, 13 * MS, 0, 0, 0, total - 96 * MiB, total, 0, 0);
    record(CMT_REC_POOL, CMT_API_POOL_STATE, 13 * MS + 1000, pool, 0, 0, 0, 0, 0, 0);
    /* 200 ping-pong buffers: each released after the next one is allocated */
    ALLOC(101, CMT_API_CUDA_MALLOC, 0, 13 * MS + 100 * US, ping, 512 * KiB, s_pingpong);
    for (uint64_t i = 1; i < 200; i++) {
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, 13 * MS + 100 * US + i * 10 * US, ping + (i % 2) * 512 * KiB, 512 * KiB,
              s_pingpong);
        FREE(101, CMT_API_CUDA_FREE, 13 * MS + 100 * US + i * 10 * US + 5 * US, ping + ((i - 1) % 2) * 512 * KiB);
    }
    FREE(101, CMT_API_CUDA_FREE, 16 * MS, ping + (199 % 2) * 512 * KiB);
    /* the loader thread: 4 batches of 8 MiB; the main thread frees two */
    for (uint64_t k = 0; k < 4; k++)
        ALLOC(102, CMT_API_CUDA_MALLOC, 0, 16 * MS + k * 100 * US, batch + k * 8 * MiB, 8 * MiB, s_batch);
    /* 15 pool blocks of 1 MiB, 100 us apart; the pool is sampled after the
     * fourth, so the samples see 4 MiB reserved while 15 MiB are handed out */
    for (uint64_t k = 0; k < 15; k++) {
        struct cmt_event e = {
            .type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC_FROM_POOL_ASYNC, .kind = CMT_KIND_ASYNC,
            .has_device = true, .device = 0, .ts = START + 17 * MS + k * 100 * US, .addr = pooled + k * MiB,
            .size = 1 * MiB, .stack = s_stage, .stream = 0x5100, .aux = {pool}};
        if (cmt_tb_event(b, 101, &e) != 0)
            fail("event");
        if (k == 3) {
            record(CMT_REC_SAMPLE, CMT_API_SAMPLE_PERIODIC, 17 * MS + 350 * US, 0, 0, 0,
                   total - (64 + 32 + 32 + 4) * MiB, total, 4 * MiB, 4 * MiB);
            record(CMT_REC_POOL, CMT_API_POOL_STATE, 17 * MS + 351 * US, pool, 0, 0, 4 * MiB, 4 * MiB, 0, 0);
        }
    }
    for (uint64_t k = 0; k < 15; k++)
        FREE(101, CMT_API_CUDA_FREE_ASYNC, 19 * MS + k * 10 * US, pooled + k * MiB);
    FREE(101, CMT_API_CUDA_FREE, 20 * MS, batch + 24 * MiB);
    FREE(101, CMT_API_CUDA_FREE, 20 * MS + 10 * US, batch + 16 * MiB);
    /* at exit: 32 table blocks and 2 batches live, the pool released its
     * reserve (threshold 0) */
    record(CMT_REC_SAMPLE, CMT_API_SAMPLE_EXIT, 23500 * US, 0, 0, 0, total - (64 + 32 + 16) * MiB, total, 0, 0);
    record(CMT_REC_POOL, CMT_API_POOL_STATE, 23500 * US + 1000, pool, 0, 0, 0, 0, 0, 0);
    cmt_tb_end(b, START + 23600 * US, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

/* old.bin, new.bin, other.bin: runs for cumemtrace diff. steps: 1 MiB
 * leaked per step at remember_batch, an upload of 100 tiles per step, 256
 * MiB of weights. new.bin adds a 64 MiB buffer at the peak and drops
 * warm_up. */
static void diff_run(const char *dir, const char *name, const char *exe, uint64_t steps, uint64_t day, bool extra)
{
    char steps_arg[16];
    snprintf(steps_arg, sizeof steps_arg, "%" PRIu64, steps);
    const char *argv[] = {exe, "--steps", steps_arg};
    open_trace_as(dir, name, 5000 + (uint32_t)day, -1, 3, argv, REALTIME + day * 86400ull * 1000000000ull);
    uint64_t f_tile = cmt_tb_frame(b, "upload_tile", "/src/app/tile.c", 14);
    uint64_t f_warm = cmt_tb_frame(b, "warm_up", "/src/app/train.c", 60);
    uint64_t f_extra = cmt_tb_frame(b, "attention_cache", "/src/app/model.c", 90);
    uint32_t s_weights = stack(4, f_cuda_malloc, f_weights, f_train, f_main);
    uint32_t s_cache = stack(5, f_cuda_malloc, f_cache, f_step, f_train, f_main);
    uint32_t s_tile = stack(5, f_cuda_malloc, f_tile, f_step, f_train, f_main);
    uint32_t s_warm = stack(4, f_cuda_malloc, f_warm, f_train, f_main);
    uint32_t s_extra = stack(5, f_cuda_malloc, f_extra, f_step, f_train, f_main);
    const uint64_t base = 0x700000000000ull;
    ALLOC(101, CMT_API_CUDA_MALLOC, 0, 1 * MS, base, 256 * MiB, s_weights);
    if (!extra) {
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, 2 * MS, base + 1 * GiB, 32 * MiB, s_warm);
        FREE(101, CMT_API_CUDA_FREE, 3 * MS, base + 1 * GiB);
    }
    for (uint64_t step = 0; step < steps; step++) {
        uint64_t t = 10 * MS + step * MS;
        for (uint64_t i = 0; i < 100; i++) {
            ALLOC(101, CMT_API_CUDA_MALLOC, 0, t + i * 5 * US, base + 2 * GiB, 4 * MiB, s_tile);
            FREE(101, CMT_API_CUDA_FREE, t + i * 5 * US + 2 * US, base + 2 * GiB);
        }
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, t + 600 * US, base + 3 * GiB + step * MiB, 1 * MiB, s_cache);
    }
    uint64_t end = 10 * MS + steps * MS;
    if (extra) {
        ALLOC(101, CMT_API_CUDA_MALLOC, 0, end, base + 4 * GiB, 64 * MiB, s_extra);
        FREE(101, CMT_API_CUDA_FREE, end + 100 * US, base + 4 * GiB);
    }
    FREE(101, CMT_API_CUDA_FREE, end + 200 * US, base);
    cmt_tb_end(b, START + end + MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
}

/* near.bin: a kept allocation at 1 ms, two failed ones 3 h later, at
 * 10,800,001,000,100 ns and 300 ns after it. */
static void near(const char *dir)
{
    open_trace(dir, "near.bin", 6000, -1);
    uint32_t s = stack(2, f_train, f_main);
    uint64_t late = 3ull * 3600 * 1000 * MS + 1 * MS + 100;
    ALLOC(101, CMT_API_CUDA_MALLOC, 0, 1 * MS, 0x7f0000000000ull, 1 * MiB, s);
    event(101, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, late, 0, 100 * GiB, s, 2);
    event(101, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, late + 300, 0, 100 * GiB, s, 2);
    close_trace(3ull * 3600 * 1000 + 2);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_golden DIR\n");
        return 2;
    }
    mixed(argv[1]);
    for (int r = 0; r < 3; r++)
        rank(argv[1], r);
    frag(argv[1]);
    small(argv[1]);
    diff_run(argv[1], "old.bin", "/opt/app/train", 10, 0, false);
    diff_run(argv[1], "new.bin", "/opt/app/train", 30, 1, true);
    diff_run(argv[1], "other.bin", "/opt/app/infer", 10, 2, false);
    near(argv[1]);
    return 0;
}
