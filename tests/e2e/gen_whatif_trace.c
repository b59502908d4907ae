/* SPDX-License-Identifier: MIT */
/* gen_whatif_trace OUT.bin [--fraction]: a PyTorch run's block layer as the
 * shim records it (format 2.4: the allocator's settings in the ALLOCATOR
 * record, PYTORCH_CUDA_ALLOC_CONF unset), for `cumemtrace whatif`
 * (test_whatif.py asserts what follows from it). Every segment record is
 * what PyTorch 2.11's allocator does with these requests under its
 * defaults, next to the driver's calls it makes; tensors carry a Python
 * frame, steps are NVTX ranges.
 *
 * Device 0 has 1 GiB; the first sample finds 100 MiB used (the CUDA
 * context); a library keeps 50 MiB of its own (a cudaMalloc outside the
 * cache): PyTorch's cache has room for 874 MiB. Stream 0x10 unless said.
 *
 *   step 1:  A 300 MiB (a segment of its own, model.py:10)
 *            B 300 MiB (model.py:11)
 *            A freed; C 200 MiB (model.py:12) from A's cached block
 *            (split: 100 MiB left); B freed
 *   step 2 > forward:
 *            D 400 MiB (model.py:20): no cached block fits; cudaMalloc of
 *            400 MiB fails (1000 MiB > 874); the cache frees B's unsplit
 *            segment and retries: served. Reserved peak: 700 MiB, allocated
 *            peak 600 MiB (A and B, then C and D).
 *            D freed
 *   empty_cache(): D's segment released (reserved 300 MiB)
 *   stream 0x20: E 50 MiB (model.py:30): a segment of its own, the cached
 *            100 MiB being stream 0x10's
 *
 * --fraction: instead of the failed cudaMalloc, the cache's own limit
 * (set_per_process_memory_fraction) refuses D: B's segment released, then
 * PyTorch's OOM record for D (no driver call failed); the program goes on
 * without D (it caught torch.OutOfMemoryError), E as above. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1024ull * 1024ull)
#define MS 1000000ull
#define START 9000000000000ull
#define TID 4242
#define S1 0x10
#define S2 0x20
#define SEG_A 0x7f0000000000ull
#define SEG_B 0x7f0020000000ull
#define SEG_D 0x7f0040000000ull
#define SEG_E 0x7f0080000000ull
#define LIB 0x7f00a0000000ull

static struct cmt_trace_builder *b;
static uint64_t now;

static void fail(const char *what)
{
    fprintf(stderr, "gen_whatif_trace: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void put(uint8_t type, uint8_t api, uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack,
                int32_t result, uint64_t aux0, uint64_t aux1, uint64_t aux2)
{
    now += MS / 10;
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = type != CMT_REC_FREE && type != CMT_REC_MARK,
        .device = 0,
        .result = result,
        .ts = START + now,
        .addr = addr,
        .size = size,
        .stream = stream,
        .stack = stack,
        .aux = {aux0, aux1, aux2},
    };
    if (cmt_tb_event(b, TID, &e) != 0)
        fail("event");
}

static void driver_alloc(uint64_t addr, uint64_t size, uint32_t stack)
{
    put(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, addr, size, 0, stack, 0, 0, 0, 0);
}

static void block(uint8_t api, uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack)
{
    put(CMT_REC_BLOCK, api, addr, size, stream, stack, 0, 0, 0, 0);
}

static void segment(uint64_t addr, uint64_t size, uint64_t stream, uint32_t stack)
{
    driver_alloc(addr, size, stack);
    block(CMT_API_TORCH_SEGMENT_ALLOC, addr, size, stream, 0);
}

static void segment_free(uint64_t addr, uint64_t size, uint64_t stream)
{
    block(CMT_API_TORCH_SEGMENT_FREE, addr, size, stream, 0);
    put(CMT_REC_FREE, CMT_API_CUDA_FREE, addr, 0, 0, 0, 0, 0, 0, 0);
}

static void tensor_free(uint64_t addr, uint64_t size, uint64_t stream)
{
    block(CMT_API_TORCH_FREE_REQUESTED, addr, size, stream, 0);
    block(CMT_API_TORCH_FREE_COMPLETED, addr, size, stream, 0);
}

static void mark(uint8_t api, uint32_t name)
{
    put(CMT_REC_MARK, api, 0, 0, 0, 0, 0, name, 0, 0);
}

static uint32_t site(unsigned line)
{
    uint64_t f = cmt_tb_frame_language(b, "Model.forward", "model.py", line, 1);
    return cmt_tb_stack(b, &f, 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: gen_whatif_trace OUT.bin [--fraction]\n");
        return 2;
    }
    bool fraction = argc > 2 && !strcmp(argv[2], "--fraction");
    struct cmt_trace_builder_options opt = {.pid = 4242, .start_monotonic_ns = START,
                                            .start_realtime_ns = 1767225600000000000ull, .clean_exit = true};
    b = cmt_tb_create(argv[1], &opt);
    if (!b)
        fail(argv[1]);
    const char *args[] = {"python3", "train.py"};
    cmt_tb_process(b, 4242, 1, "/usr/bin/python3", 2, args, "gpu-host", -1, "/work");
    cmt_tb_thread(b, TID, "python3");
    cmt_tb_device(b, 0, "Test GPU 1 GiB", 1024 * MiB);
    uint32_t lib = site(5), sa = site(10), sb = site(11), sc = site(12), sd = site(20), se = site(30);
    uint32_t step1 = cmt_tb_string(b, "step 1"), step2 = cmt_tb_string(b, "step 2"),
             forward = cmt_tb_string(b, "forward");

    /* the context: 100 MiB used before any allocation; a library's 50 MiB */
    put(CMT_REC_SAMPLE, CMT_API_SAMPLE_START, 0, 0, 0, 0, 0, 924 * MiB, 1024 * MiB, 0);
    driver_alloc(LIB, 50 * MiB, lib);
    cmt_tb_allocator(b, START + now, CMT_FRAMEWORK_PYTORCH, "2.11.0+cu130", CMT_BLOCKS_ON, "native", NULL, NULL);

    mark(CMT_API_MARK_PUSH, step1);
    segment(SEG_A, 300 * MiB, S1, sa);
    block(CMT_API_TORCH_ALLOC, SEG_A, 300 * MiB, S1, sa);
    segment(SEG_B, 300 * MiB, S1, sb);
    block(CMT_API_TORCH_ALLOC, SEG_B, 300 * MiB, S1, sb);
    tensor_free(SEG_A, 300 * MiB, S1);
    block(CMT_API_TORCH_ALLOC, SEG_A, 200 * MiB, S1, sc);
    tensor_free(SEG_B, 300 * MiB, S1);
    mark(CMT_API_MARK_POP, 0);

    mark(CMT_API_MARK_PUSH, step2);
    mark(CMT_API_MARK_PUSH, forward);
    if (!fraction) {
        put(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 400 * MiB, 0, sd, 2, 0, 0, 0); /* cudaErrorMemoryAllocation */
        put(CMT_REC_SAMPLE, CMT_API_SAMPLE_FAILURE, 0, 400 * MiB, 0, 0, 0, 274 * MiB, 1024 * MiB, 0);
        segment_free(SEG_B, 300 * MiB, S1);
        segment(SEG_D, 400 * MiB, S1, sd);
        block(CMT_API_TORCH_ALLOC, SEG_D, 400 * MiB, S1, sd);
        tensor_free(SEG_D, 400 * MiB, S1);
    } else {
        segment_free(SEG_B, 300 * MiB, S1);
        put(CMT_REC_BLOCK, CMT_API_TORCH_OOM, 0, 400 * MiB, S1, sd, 0, 0, 0, 574 * MiB);
    }
    mark(CMT_API_MARK_POP, 0);
    mark(CMT_API_MARK_POP, 0);

    if (!fraction)
        segment_free(SEG_D, 400 * MiB, S1); /* empty_cache() */
    segment(SEG_E, 50 * MiB, S2, se);
    block(CMT_API_TORCH_ALLOC, SEG_E, 50 * MiB, S2, se);
    cmt_tb_end(b, START + now + MS, 0);
    if (cmt_tb_close(b) != 0)
        fail("close");
    return 0;
}
