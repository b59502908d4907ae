/* SPDX-License-Identifier: MIT */
/* gen_ipc_frag_trace OUT.bin: an importer whose own cudaMalloc blocks lie on
 * either side of memory mapped from another process (cudaIpcOpenMemHandle),
 * written by the trace builder. The driver put the mapping in the plain
 * range between the importer's blocks; that gap is another process's
 * memory, not this one's free memory. test_forensics.py (ipc_mapping)
 * asserts the figures; they follow from this, on a device of 1 GiB:
 *
 *   A  64 MiB at 0x7f0000000000           (cudaMalloc)
 *   M 256 MiB at 0x7f0004000000           (cudaIpcOpenMemHandle, never closed)
 *   B  64 MiB at 0x7f0014000000
 *   C  32 MiB at 0x7f0018000000           (freed: a hole of 32 MiB)
 *   D  64 MiB at 0x7f001a000000           (ends 0x7f001e000000)
 *   a cudaMalloc of 128 MiB fails after C's free
 *
 * Holes: 1, 32 MiB (C's); the largest free range 32 MiB, not M's 256 MiB.
 * Span 224 MiB (192 live + 32 free); 256 MiB left out of it (M's gap). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)
#define MS 1000000ull
#define START 9000000000000ull
#define REALTIME 1767225600000000000ull
#define DEVICE_BYTES (1 * GiB)
#define BASE 0x7f0000000000ull

static struct cmt_trace_builder *b;

static void fail(const char *what)
{
    fprintf(stderr, "gen_ipc_frag_trace: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void record(uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack,
                   int32_t result, uint64_t aux0, uint64_t aux1)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = true,
        .device = 0,
        .result = result,
        .ts = START + ts,
        .addr = addr,
        .size = size,
        .stack = stack,
        .aux = {aux0, aux1},
    };
    if (cmt_tb_event(b, 1, &e) != 0)
        fail("event");
}

/* A device sample: free and total as cuMemGetInfo says, the mapping and
 * 64 MiB of context besides this process's live bytes. */
static void sample(uint8_t api, uint64_t ts, uint64_t used)
{
    record(CMT_REC_SAMPLE, api, ts, 0, 0, 0, 0, DEVICE_BYTES - used, DEVICE_BYTES);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_ipc_frag_trace OUT.bin\n");
        return 2;
    }
    struct cmt_trace_builder_options opt = {
        .pid = 7200, .start_monotonic_ns = START, .start_realtime_ns = REALTIME, .clean_exit = true};
    b = cmt_tb_create(argv[1], &opt);
    if (!b)
        fail(argv[1]);
    const char *args[] = {"/opt/app/consumer"};
    cmt_tb_process(b, 7200, 1, "/opt/app/consumer", 1, args, "host", -1, "/opt/app");
    cmt_tb_thread(b, 1, "main");
    uint64_t f_alloc = cmt_tb_frame(b, "alloc_buffer", "/opt/app/consumer.c", 20);
    uint64_t f_open = cmt_tb_frame(b, "open_shared", "/opt/app/consumer.c", 40);
    uint32_t s_alloc = cmt_tb_stack(b, &f_alloc, 1), s_open = cmt_tb_stack(b, &f_open, 1);

    sample(CMT_API_SAMPLE_START, 1 * MS, 64 * MiB);
    record(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 2 * MS, BASE, 64 * MiB, s_alloc, 0, 0, 0);
    record(CMT_REC_IPC, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 3 * MS, BASE + 64 * MiB, 256 * MiB, s_open, 0, 0x5eed, 0);
    record(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 4 * MS, BASE + 320 * MiB, 64 * MiB, s_alloc, 0, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 5 * MS, BASE + 384 * MiB, 32 * MiB, s_alloc, 0, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 6 * MS, BASE + 416 * MiB, 64 * MiB, s_alloc, 0, 0, 0);
    record(CMT_REC_FREE, CMT_API_CUDA_FREE, 7 * MS, BASE + 384 * MiB, 0, 0, 0, 0, 0);
    sample(CMT_API_SAMPLE_PERIODIC, 8 * MS, 64 * MiB + 256 * MiB + 192 * MiB);
    record(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 9 * MS, 0, 128 * MiB, s_alloc, 2, 0, 0);
    sample(CMT_API_SAMPLE_FAILURE, 9 * MS + 1, 64 * MiB + 256 * MiB + 192 * MiB);
    sample(CMT_API_SAMPLE_EXIT, 10 * MS, 64 * MiB + 256 * MiB + 192 * MiB);
    cmt_tb_end(b, START + 11 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
    return 0;
}
