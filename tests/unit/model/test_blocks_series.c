/* SPDX-License-Identifier: MIT */
/* The block layer's bytes over time as the model downsamples them
 * (model/blocks_report.h, struct cmt_blocks_series): equal buckets from the
 * first change, each bucket's lowest, highest and last tensors' and
 * segments' bytes, the peaks kept exactly however many changes merge. */
#include "blocks_report.h"

#include "test_util.h"

#define MiB (1024ull * 1024ull)
#define BASE 0x7f0000000000ull

static const uint64_t no_aux[CMT_AUX_COUNT];
static uint64_t now;

static void ev(struct cmt_block_layer *bl, uint8_t api, uint64_t addr, uint64_t size, uint64_t stack)
{
    cmt_block_layer_event(bl, api, 0, now += 100, BASE + addr, size, stack, no_aux);
}

/* tests/e2e/blocks/blocks_train.c's sequence: 16 records 100 ns apart, 13
 * of them change a figure (the three free requests do not) */
static void test_few_changes(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    now = 0;
    uint64_t a = 0, b = 1024, c = 2 * MiB, d = 7 * MiB, f = 22 * MiB;
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, 0, 2 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, a, 1000, 1);
    ev(&bl, CMT_API_TORCH_ALLOC, b, 3000, 2);
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, c, 20 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, c, 5 * MiB, 3);
    ev(&bl, CMT_API_TORCH_ALLOC, d, 14 * MiB + MiB / 2, 4);
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, f, 12 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, f, 12 * MiB, 5);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, b, 3000, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, b, 3000, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, b, 2000, 6);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, c, 5 * MiB, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, c, 5 * MiB, 0);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, f, 12 * MiB, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, f, 12 * MiB, 0);
    ev(&bl, CMT_API_TORCH_SEGMENT_FREE, f, 12 * MiB, 0);
    cmt_block_layer_finish(&bl);
    CHECK_EQ_U64(bl.devices[0].n_points, 13);

    struct cmt_blocks_report r;
    CHECK(cmt_blocks_report_build(&r, &bl, NULL) == 0);
    const struct cmt_blocks_series *s = &r.devices[0].series;
    /* 100 .. 1600 ns: 1501 ns in 13 buckets of 116 ns */
    CHECK_EQ_U64(s->n, 13);
    CHECK_EQ_U64(s->origin, 100);
    CHECK_EQ_U64(s->width, 116);
    /* bucket 0, [100, 216): the small segment, then tensor a (1024 B block) */
    const struct cmt_blocks_cell *c0 = &s->cells[0];
    CHECK_EQ_U64(c0->allocated_min, 0);
    CHECK_EQ_U64(c0->allocated_max, 1024);
    CHECK_EQ_U64(c0->allocated_last, 1024);
    CHECK_EQ_U64(c0->reserved_min, 2 * MiB);
    CHECK_EQ_U64(c0->reserved_max, 2 * MiB);
    uint64_t top_a = 0, top_r = 0;
    for (size_t k = 0; k < s->n; k++) {
        if (s->cells[k].allocated_max > top_a)
            top_a = s->cells[k].allocated_max;
        if (s->cells[k].reserved_max > top_r)
            top_r = s->cells[k].reserved_max;
        CHECK(s->cells[k].allocated_min <= s->cells[k].allocated_last);
        CHECK(s->cells[k].allocated_last <= s->cells[k].allocated_max);
    }
    CHECK_EQ_U64(top_a, 33558528);
    CHECK_EQ_U64(top_r, 35651584);
    CHECK_EQ_U64(top_a, r.devices[0].peak_allocated);
    CHECK_EQ_U64(top_r, r.devices[0].peak_reserved);
    const struct cmt_blocks_cell *cl = &s->cells[s->n - 1];
    CHECK_EQ_U64(cl->allocated_last, 1024 + 2048 + 15 * MiB);
    CHECK_EQ_U64(cl->reserved_last, 22 * MiB);
    cmt_blocks_report_free(&r);
    cmt_block_layer_free(&bl);
}

/* 5000 tensors of 1 MiB made and released in one 64 MiB segment, one
 * 48 MiB tensor at record 3001: 10002 changes merge into 1024 buckets, the
 * peak (49 MiB) kept in the bucket of its instant, a bucket without a change
 * holding the one before's last. */
static void test_many_changes(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    now = 0;
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, 0, 64 * MiB, 0);
    uint64_t peak_ts = 0;
    for (int i = 0; i < 5000; i++) {
        ev(&bl, CMT_API_TORCH_ALLOC, 0, MiB, 1);
        if (i == 1500) {
            ev(&bl, CMT_API_TORCH_ALLOC, 16 * MiB, 48 * MiB, 2);
            peak_ts = now;
            ev(&bl, CMT_API_TORCH_FREE_REQUESTED, 16 * MiB, 48 * MiB, 0);
            ev(&bl, CMT_API_TORCH_FREE_COMPLETED, 16 * MiB, 48 * MiB, 0);
        }
        ev(&bl, CMT_API_TORCH_FREE_REQUESTED, 0, MiB, 0);
        ev(&bl, CMT_API_TORCH_FREE_COMPLETED, 0, MiB, 0);
    }
    cmt_block_layer_finish(&bl);
    CHECK_EQ_U64(bl.inconsistencies, 0);
    CHECK_EQ_U64(bl.devices[0].n_points, 1 + 2 * 5000 + 2);

    struct cmt_blocks_report r;
    CHECK(cmt_blocks_report_build(&r, &bl, NULL) == 0);
    const struct cmt_blocks_series *s = &r.devices[0].series;
    CHECK_EQ_U64(s->n, CMT_BLOCKS_BUCKETS);
    CHECK_EQ_U64(s->origin, 100);
    uint64_t span = now - 100 + 1;
    CHECK_EQ_U64(s->width, span / CMT_BLOCKS_BUCKETS + (span % CMT_BLOCKS_BUCKETS != 0));
    size_t at = (size_t)((peak_ts - s->origin) / s->width);
    uint64_t top = 0;
    size_t top_k = 0;
    for (size_t k = 0; k < s->n; k++) {
        CHECK_EQ_U64(s->cells[k].reserved_min, 64 * MiB);
        CHECK_EQ_U64(s->cells[k].reserved_max, 64 * MiB);
        if (s->cells[k].allocated_max > top) {
            top = s->cells[k].allocated_max;
            top_k = k;
        }
    }
    CHECK_EQ_U64(top, 49 * MiB);
    CHECK_EQ_U64(r.devices[0].peak_allocated, 49 * MiB);
    CHECK_EQ_U64(top_k, at);
    CHECK_EQ_U64(s->cells[at].allocated_min, 0);
    CHECK_EQ_U64(s->cells[s->n - 1].allocated_last, 0);
    cmt_blocks_report_free(&r);
    cmt_block_layer_free(&bl);
}

int main(void)
{
    test_few_changes();
    test_many_changes();
    printf("ok\n");
    return 0;
}
