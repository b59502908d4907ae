/* SPDX-License-Identifier: MIT */
/* gen_expandable_trace OUT.bin: a trace shaped like PyTorch's
 * expandable_segments on a GPU (tests/data/blocks/h200_train_mlp_expandable.bin,
 * an H200 run, has the same layout), written by the trace builder. The
 * program reserves address space (cuMemAddressReserve) larger than the
 * device, maps physical pieces into it (cuMemCreate + cuMemMap); the
 * driver hands out cuBLAS's plain allocations (cuMemAlloc) right after the
 * reservations for small sizes and 127 TiB higher up for large ones.
 * test_forensics.py (expandable_segments) asserts the figures; they follow
 * from this, on a device of 80 GiB:
 *
 *   R1  96 GiB reserved at 0x302000000 (to 0x1b02000000); 4 pieces of
 *       20 MiB mapped at its start
 *   s1  1 KiB at 0x1b02200000      s2 128 KiB at 0x1b02200400
 *   s3  1 KiB at 0x1b02220400 (released: a hole of 1 KiB between s2 and s4)
 *   s4  128 KiB at 0x1b02220800    (ends 0x1b02240800)
 *   R2  2 GiB reserved at 0x1b04000000 (to 0x1b84000000)
 *   s5  1 MiB at 0x1b84000000: the gap s4..s5 holds R2: address space
 *   w1  64 MiB at 0x7fbda2000000: the gap s5..w1 is wider than the device
 *   w2  64 MiB at 0x7fbdd6000000: a hole of 768 MiB between w1 and w2
 *
 * Holes: 2, 805,307,392 B (768 MiB + 1 KiB), the largest 805,306,368 B.
 * Address space left out: 2,178,676,736 B (s4..s5) + 140,334,263,697,408 B
 * (s5..w1). Reserved 98 GiB, mapped 80 MiB. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_builder.h"

#define KiB 1024ull
#define MiB (1024ull * KiB)
#define GiB (1024ull * MiB)
#define MS 1000000ull
#define START 9000000000000ull
#define REALTIME 1767225600000000000ull
#define DEVICE_BYTES (80 * GiB)

static struct cmt_trace_builder *b;

static void fail(const char *what)
{
    fprintf(stderr, "gen_expandable_trace: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void record(uint8_t type, uint8_t api, uint64_t ts, uint64_t addr, uint64_t size, uint32_t stack,
                   uint64_t aux0, uint64_t aux1)
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
        .stack = stack,
        .aux = {aux0, aux1},
    };
    if (cmt_tb_event(b, 1, &e) != 0)
        fail("event");
}

/* A device sample: free and total as cuMemGetInfo says, with 512 MiB of
 * context besides this process's live bytes. */
static void sample(uint8_t api, uint64_t ts, uint64_t live)
{
    record(CMT_REC_SAMPLE, api, ts, 0, 0, 0, DEVICE_BYTES - 512 * MiB - live, DEVICE_BYTES);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_expandable_trace OUT.bin\n");
        return 2;
    }
    struct cmt_trace_builder_options opt = {
        .pid = 7100, .start_monotonic_ns = START, .start_realtime_ns = REALTIME, .clean_exit = true};
    b = cmt_tb_create(argv[1], &opt);
    if (!b)
        fail(argv[1]);
    const char *args[] = {"/opt/app/train.py"};
    cmt_tb_process(b, 7100, 1, "/usr/bin/python3", 1, args, "host", -1, "/opt/app");
    cmt_tb_thread(b, 1, "main");
    uint64_t f_grow = cmt_tb_frame(b, "c10::cuda::CUDACachingAllocator::ExpandableSegment::map", "", 0);
    uint64_t f_cublas = cmt_tb_frame(b, "cublasCreate_v2", "", 0);
    uint64_t f_step = cmt_tb_frame(b, "step", "/opt/app/train.py", 66);
    uint64_t grow[] = {f_grow, f_step}, blas[] = {f_cublas, f_step};
    uint32_t s_grow = cmt_tb_stack(b, grow, 2), s_blas = cmt_tb_stack(b, blas, 2);

    sample(CMT_API_SAMPLE_START, 1 * MS, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ADDRESS_RESERVE, 2 * MS, 0x302000000ull, 96 * GiB, s_grow, 0, 0);
    for (uint64_t i = 0; i < 4; i++) {
        uint64_t handle = 0x36880000ull + i * 0x100;
        record(CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 3 * MS + i * 10, handle, 20 * MiB, s_grow, 1, 0);
        record(CMT_REC_ALLOC, CMT_API_CU_MEM_MAP, 3 * MS + i * 10 + 5, 0x302000000ull + i * 20 * MiB, 20 * MiB,
               s_grow, handle, 0);
    }
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 4 * MS, 0x1b02200000ull, 1 * KiB, s_blas, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 4 * MS + 100, 0x1b02200400ull, 128 * KiB, s_blas, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 4 * MS + 200, 0x1b02220400ull, 1 * KiB, s_blas, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 4 * MS + 300, 0x1b02220800ull, 128 * KiB, s_blas, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ADDRESS_RESERVE, 5 * MS, 0x1b04000000ull, 2 * GiB, s_grow, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 6 * MS, 0x1b84000000ull, 1 * MiB, s_blas, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 7 * MS, 0x7fbda2000000ull, 64 * MiB, s_blas, 0, 0);
    record(CMT_REC_ALLOC, CMT_API_CU_MEM_ALLOC, 7 * MS + 100, 0x7fbdd6000000ull, 64 * MiB, s_blas, 0, 0);
    record(CMT_REC_FREE, CMT_API_CU_MEM_FREE, 8 * MS, 0x1b02220400ull, 0, 0, 0, 0);
    uint64_t live = 80 * MiB + 1 * KiB + 256 * KiB + 1 * MiB + 128 * MiB;
    sample(CMT_API_SAMPLE_PERIODIC, 9 * MS, live);
    sample(CMT_API_SAMPLE_EXIT, 10 * MS, live);
    cmt_tb_end(b, START + 11 * MS, CMT_END_EXIT);
    if (cmt_tb_close(b) != 0)
        fail("close");
    return 0;
}
