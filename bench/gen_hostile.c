/* SPDX-License-Identifier: MIT */
/* bench_gen_hostile SHAPE OUT N
 *
 * Writes a valid trace whose shape is hostile to the analyzer's memory: N of
 * one thing a trace can hold in any number, each cheap in the file and each
 * a table entry in the analyzer. The analyzer must need memory in proportion
 * to the file, with a small constant (docs/performance.md, "Memory on
 * hostile traces", quotes the bytes per item before and after; the test
 * fuzz-hostile-memory counts them for 1 million distinct stacks).
 *
 * Shapes:
 *   stacks N    N distinct stacks of 8 frames in 4 modules, each allocating
 *               once and freeing at once: call sites only, nothing live
 *   live N      N allocations from 4 call sites, all live at exit
 *   frames N    N / 256 distinct stacks of 256 frames each (deep recursion)
 *   strings N   N distinct Python frames (function and file names of their
 *               own), one per stack, each allocating and freeing once
 *   phases N    N distinct NVTX phase names, each pushed, allocated in
 *               and popped
 *   threads N   N threads, each named, each allocating and freeing once
 *
 * Deterministic: the same arguments make the same bytes. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define N_MODULES 4
#define MODULE_SPAN (1ull << 32)

static const uint64_t module_base[N_MODULES] = {0x555555554000ull, 0x7f1000000000ull, 0x7f2000000000ull,
                                                0x7f3000000000ull};
static const char *const module_path[N_MODULES] = {"/opt/hostile/bin/app", "/opt/hostile/lib/libmodel.so",
                                                   "/opt/hostile/lib/libkernels.so", "/usr/lib/libcudart.so.13"};

struct gen {
    struct cmt_trace_builder *b;
    uint64_t ts;
    uint32_t tid;
};

/* A distinct return address in module m for (item, depth): items spread
 * over the module so that no two stacks share their innermost frame. */
static uint64_t frame_address(unsigned m, uint64_t item, unsigned depth)
{
    uint64_t spread = (item * 0x9e3779b1ull + (uint64_t)depth * 0x10001ull) % (MODULE_SPAN - 0x1000);
    return module_base[m] + 0x1000 + (spread & ~(uint64_t)0xf) + 7;
}

static int event(struct gen *g, uint8_t type, uint8_t api, uint64_t addr, uint64_t size, uint64_t stack)
{
    struct cmt_event e = {.type = type,
                          .api = api,
                          .kind = (uint8_t)cmt_api_default_kind(api),
                          .has_device = true,
                          .device = 0,
                          .ts = g->ts,
                          .addr = addr,
                          .size = size,
                          .stack = stack};
    g->ts += 150;
    return cmt_tb_event(g->b, g->tid, &e);
}

static int alloc_free(struct gen *g, uint64_t addr, uint64_t size, uint64_t stack)
{
    if (event(g, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, addr, size, stack) != 0)
        return -1;
    return event(g, CMT_REC_FREE, CMT_API_CUDA_FREE, addr, 0, 0);
}

static int mark(struct gen *g, uint8_t api, uint32_t name_id)
{
    struct cmt_event e = {.type = CMT_REC_MARK, .api = api, .kind = CMT_KIND_DEVICE, .ts = g->ts};
    e.aux[CMT_MARK_AUX_NAME] = name_id;
    g->ts += 150;
    return cmt_tb_event(g->b, g->tid, &e);
}

static int shape_stacks(struct gen *g, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        uint64_t frames[8];
        for (unsigned d = 0; d < 8; d++)
            frames[d] = frame_address(d * N_MODULES / 8, i, d);
        uint32_t id = cmt_tb_stack(g->b, frames, 8);
        if (alloc_free(g, 0x7e0000000000ull + (i & 0xffff) * 0x100000ull, 4096, id) != 0)
            return -1;
    }
    return 0;
}

static int shape_live(struct gen *g, uint64_t n)
{
    uint32_t ids[4];
    for (unsigned s = 0; s < 4; s++) {
        uint64_t frames[4] = {frame_address(1, s, 0), frame_address(0, s, 1), frame_address(0, s, 2),
                              frame_address(0, s, 3)};
        ids[s] = cmt_tb_stack(g->b, frames, 4);
    }
    for (uint64_t i = 0; i < n; i++)
        if (event(g, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x7e0000000000ull + i * 0x1000ull, 512, ids[i % 4]) != 0)
            return -1;
    return 0;
}

static int shape_frames(struct gen *g, uint64_t n)
{
    enum { DEPTH = 256 };
    uint64_t frames[DEPTH];
    for (uint64_t i = 0; i < n / DEPTH; i++) {
        for (unsigned d = 0; d < DEPTH; d++)
            frames[d] = frame_address(d % N_MODULES, i, d);
        uint32_t id = cmt_tb_stack(g->b, frames, DEPTH);
        if (alloc_free(g, 0x7e0000000000ull, 4096, id) != 0)
            return -1;
    }
    return 0;
}

static int shape_strings(struct gen *g, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++) {
        char function[48], file[64];
        snprintf(function, sizeof function, "train_step_%" PRIu64, i);
        snprintf(file, sizeof file, "/opt/hostile/model/layer_%" PRIu64 ".py", i);
        uint64_t frames[3] = {frame_address(2, i, 0), cmt_tb_frame_language(g->b, function, file, 10, 1),
                              frame_address(0, 0, 2)};
        uint32_t id = cmt_tb_stack(g->b, frames, 3);
        if (alloc_free(g, 0x7e0000000000ull, 4096, id) != 0)
            return -1;
    }
    return 0;
}

static int shape_phases(struct gen *g, uint64_t n)
{
    uint64_t frames[2] = {frame_address(1, 0, 0), frame_address(0, 0, 1)};
    uint32_t stack = cmt_tb_stack(g->b, frames, 2);
    for (uint64_t i = 0; i < n; i++) {
        char name[48];
        snprintf(name, sizeof name, "phase %" PRIu64, i);
        uint32_t name_id = cmt_tb_string(g->b, name);
        if (mark(g, CMT_API_MARK_PUSH, name_id) != 0 || alloc_free(g, 0x7e0000000000ull, 4096, stack) != 0 ||
            mark(g, CMT_API_MARK_POP, 0) != 0)
            return -1;
    }
    return 0;
}

static int shape_threads(struct gen *g, uint64_t n)
{
    uint64_t frames[2] = {frame_address(1, 0, 0), frame_address(0, 0, 1)};
    uint32_t stack = cmt_tb_stack(g->b, frames, 2);
    for (uint64_t i = 0; i < n; i++) {
        char name[24];
        g->tid = 10000 + (uint32_t)i;
        snprintf(name, sizeof name, "w%" PRIu32, (uint32_t)i);
        cmt_tb_thread(g->b, g->tid, name);
        if (alloc_free(g, 0x7e0000000000ull, 4096, stack) != 0)
            return -1;
    }
    return 0;
}

static const struct {
    const char *name;
    int (*make)(struct gen *, uint64_t);
} shapes[] = {
    {"stacks", shape_stacks},   {"live", shape_live},       {"frames", shape_frames},
    {"strings", shape_strings}, {"phases", shape_phases},   {"threads", shape_threads},
};

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: bench_gen_hostile stacks|live|frames|strings|phases|threads OUT N\n");
        return 2;
    }
    int (*make)(struct gen *, uint64_t) = NULL;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        if (!strcmp(argv[1], shapes[i].name))
            make = shapes[i].make;
    char *end;
    uint64_t n = strtoull(argv[3], &end, 10);
    if (!make || *end || !n) {
        fprintf(stderr, "bench_gen_hostile: unknown shape %s or bad count %s\n", argv[1], argv[3]);
        return 2;
    }
    const uint64_t start = 1000000000000ull;
    struct cmt_trace_builder_options opt = {.pid = 4343,
                                            .start_monotonic_ns = start,
                                            .start_realtime_ns = 1767225600ull * 1000000000ull,
                                            .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(argv[2], &opt);
    if (!b) {
        fprintf(stderr, "bench_gen_hostile: cannot create %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    const char *args[] = {module_path[0], argv[1]};
    cmt_tb_process(b, 4343, 1, args[0], 2, args, "hostilehost", -1, "/opt/hostile");
    for (unsigned m = 0; m < N_MODULES; m++)
        cmt_tb_module(b, module_path[m], module_base[m], module_base[m], module_base[m] + MODULE_SPAN, NULL, 0);
    cmt_tb_device(b, 0, "Synthetic GPU", 80ull << 30);
    struct gen g = {.b = b, .ts = start + 1000, .tid = 4343};
    cmt_tb_thread(b, g.tid, "main");
    if (make(&g, n) != 0) {
        fprintf(stderr, "bench_gen_hostile: cannot write %s\n", argv[2]);
        cmt_tb_close(b);
        return 1;
    }
    cmt_tb_end(b, g.ts, 0);
    if (cmt_tb_close(b) != 0) {
        fprintf(stderr, "bench_gen_hostile: cannot write %s: %s\n", argv[2], strerror(errno));
        return 1;
    }
    return 0;
}
