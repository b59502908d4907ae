/* SPDX-License-Identifier: MIT */
/* The block layer's replay (analyzer/analyses/block_layer.h): block sizes by
 * PyTorch's split rule, peaks, the cache at the peak per segment class,
 * tensors never released, the two-layer verdict of a failed allocation,
 * expandable segments and every inconsistency it names. */
#include "block_layer.h"

#include "test_util.h"

#define MiB (1024ull * 1024ull)
#define BASE 0x7f0000000000ull

static const uint64_t no_aux[CMT_AUX_COUNT];
static uint64_t now;

static void ev(struct cmt_block_layer *bl, uint8_t api, uint64_t addr, uint64_t size, uint64_t stack)
{
    cmt_block_layer_event(bl, api, 0, now += 100, BASE + addr, size, stack, no_aux);
}

/* The sequence of tests/e2e/blocks/blocks_train.c: the same figures as the
 * allocator double's own. */
static void test_double_sequence(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    uint64_t a = 0, b = 1024, c = 2 * MiB, d = 7 * MiB, f = 22 * MiB;
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, 0, 2 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, a, 1000, 1);
    ev(&bl, CMT_API_TORCH_ALLOC, b, 3000, 2);
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, c, 20 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, c, 5 * MiB, 3);
    ev(&bl, CMT_API_TORCH_ALLOC, d, 14 * MiB + MiB / 2, 4);
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, f, 12 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, f, 12 * MiB, 5);
    uint64_t peak_ts = now;
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, b, 3000, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, b, 3000, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, b, 2000, 6);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, c, 5 * MiB, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, c, 5 * MiB, 0);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, f, 12 * MiB, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, f, 12 * MiB, 0);
    ev(&bl, CMT_API_TORCH_SEGMENT_FREE, f, 12 * MiB, 0);
    cmt_block_layer_finish(&bl);

    CHECK_EQ_U64(bl.inconsistencies, 0);
    CHECK_EQ_U64(bl.n_devices, 1);
    const struct cmt_bl_device *dv = &bl.devices[0];
    CHECK_EQ_U64(dv->peak_allocated, 33558528);
    CHECK_EQ_U64(dv->peak_reserved, 35651584);
    CHECK_EQ_U64(dv->allocated, 1024 + 2048 + 15 * MiB);
    CHECK_EQ_U64(dv->reserved, 22 * MiB);
    /* the cache at the peak */
    const struct cmt_bl_snapshot *p = &dv->peak;
    CHECK_EQ_U64(p->ts, peak_ts);
    CHECK_EQ_U64(p->allocated, 33558528);
    CHECK_EQ_U64(p->reserved, 35651584);
    CHECK_EQ_U64(p->requested, 1000 + 3000 + 5 * MiB + 14 * MiB + MiB / 2 + 12 * MiB);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_SMALL].segments, 1);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_SMALL].allocated, 4096);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_SMALL].largest_free, 2 * MiB - 4096);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_LARGE].reserved, 20 * MiB);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_LARGE].allocated, 20 * MiB);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_LARGE].largest_free, 0);
    CHECK_EQ_U64(p->classes[CMT_BL_CLASS_HUGE].reserved, 12 * MiB);
    CHECK_EQ_U64(p->n_sites, 5);
    CHECK_EQ_U64(p->sites[0].stack, 4); /* d: 15 MiB */
    CHECK_EQ_U64(p->sites[0].bytes, 15 * MiB);
    CHECK_EQ_U64(p->sites[1].stack, 5);
    CHECK_EQ_U64(p->sites[2].stack, 3);
    CHECK_EQ_U64(p->sites[3].bytes, 3072);
    CHECK_EQ_U64(p->sites[4].bytes, 1024);
    /* tensors never released */
    struct cmt_bl_site *leaks;
    uint64_t blocks, bytes;
    CHECK_EQ_U64(cmt_bl_leaks(dv, &leaks, &blocks, &bytes), 3);
    CHECK_EQ_U64(blocks, 3);
    CHECK_EQ_U64(bytes, 15 * MiB + 1024 + 2048);
    CHECK_EQ_U64(leaks[0].stack, 4);
    CHECK_EQ_U64(leaks[1].stack, 6);
    CHECK_EQ_U64(leaks[2].stack, 1);
    free(leaks);
    cmt_block_layer_free(&bl);
}

/* A 20 MiB segment cut by kept tensors: five 2 MiB blocks 4 MiB apart, the
 * gaps filled and freed again: 10 MiB free in the cache, no range over
 * 2 MiB; an 8 MiB request with 2 MiB free on the device: fragmentation, and
 * expandable segments would have served it. Then a request nothing could
 * serve. */
static void test_oom_verdicts(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, 0, 20 * MiB, 0);
    for (unsigned i = 0; i < 5; i++)
        ev(&bl, CMT_API_TORCH_ALLOC, i * 4 * MiB, 2 * MiB, 10 + i);
    for (unsigned i = 0; i < 4; i++)
        ev(&bl, CMT_API_TORCH_ALLOC, i * 4 * MiB + 2 * MiB, 2 * MiB, 20 + i);
    CHECK_EQ_U64(bl.devices[0].allocated, 18 * MiB);
    for (unsigned i = 0; i < 4; i++) {
        ev(&bl, CMT_API_TORCH_FREE_REQUESTED, i * 4 * MiB + 2 * MiB, 0, 0);
        ev(&bl, CMT_API_TORCH_FREE_COMPLETED, i * 4 * MiB + 2 * MiB, 0, 0);
    }
    uint64_t aux[CMT_AUX_COUNT] = {0, 0, 2 * MiB, 0};
    cmt_block_layer_event(&bl, CMT_API_TORCH_OOM, 0, now += 100, 0, 8 * MiB, 30, aux);
    aux[CMT_BLOCK_AUX_DEVICE_FREE] = 0;
    cmt_block_layer_event(&bl, CMT_API_TORCH_OOM, 0, now += 100, 0, 64 * MiB, 31, aux);
    cmt_block_layer_finish(&bl);
    CHECK_EQ_U64(bl.inconsistencies, 0);
    const struct cmt_bl_device *d = &bl.devices[0];
    CHECK_EQ_U64(d->n_ooms, 2);
    const struct cmt_bl_oom *o = &d->ooms[0];
    CHECK_EQ_U64(o->at.reserved, 20 * MiB);
    CHECK_EQ_U64(o->at.allocated, 10 * MiB);
    CHECK_EQ_U64(o->at.classes[CMT_BL_CLASS_LARGE].largest_free, 2 * MiB);
    CHECK_EQ_U64(o->verdict, CMT_BL_VERDICT_FRAGMENTATION);
    CHECK(o->expandable_would_serve);
    CHECK_EQ_U64(d->ooms[1].verdict, CMT_BL_VERDICT_CAPACITY);
    CHECK(!d->ooms[1].expandable_would_serve);
    CHECK_EQ_U64(d->ooms[1].stack, 31);
    cmt_block_layer_free(&bl);
}

/* Expandable segments: ranges mapped one after another make one segment;
 * unmapping the middle cuts it in two. */
static void test_expandable(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    ev(&bl, CMT_API_TORCH_SEGMENT_MAP, 0, 20 * MiB, 0);
    ev(&bl, CMT_API_TORCH_SEGMENT_MAP, 20 * MiB, 20 * MiB, 0);
    CHECK_EQ_U64(bl.devices[0].n_segments, 1);
    ev(&bl, CMT_API_TORCH_ALLOC, 0, 30 * MiB, 1);
    CHECK_EQ_U64(bl.devices[0].allocated, 30 * MiB);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, 0, 0, 0);
    ev(&bl, CMT_API_TORCH_FREE_COMPLETED, 0, 0, 0);
    ev(&bl, CMT_API_TORCH_SEGMENT_UNMAP, 10 * MiB, 20 * MiB, 0);
    CHECK_EQ_U64(bl.devices[0].n_segments, 2);
    CHECK_EQ_U64(bl.devices[0].reserved, 20 * MiB);
    CHECK_EQ_U64(bl.devices[0].peak_reserved, 40 * MiB);
    CHECK_EQ_U64(bl.inconsistencies, 0);
    cmt_block_layer_free(&bl);
}

static void test_inconsistencies(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    ev(&bl, CMT_API_TORCH_ALLOC, 0, 4096, 1);
    CHECK_EQ_U64(bl.inconsistencies, 1);
    CHECK_STR(bl.first_inconsistency.what, "a tensor's block outside every live segment");
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, 0, 2 * MiB, 0);
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, MiB, 2 * MiB, 0); /* over the first */
    ev(&bl, CMT_API_TORCH_ALLOC, 0, 4096, 1);
    ev(&bl, CMT_API_TORCH_ALLOC, 0, 4096, 1);      /* again before freed */
    ev(&bl, CMT_API_TORCH_ALLOC, 1024, 512, 1);    /* inside the first block */
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, 8192, 0, 0);
    ev(&bl, CMT_API_TORCH_SEGMENT_FREE, 0, 2 * MiB, 0); /* with a block in it */
    ev(&bl, CMT_API_TORCH_SEGMENT_FREE, 4 * MiB, 2 * MiB, 0);
    CHECK_EQ_U64(bl.inconsistencies, 7);
    CHECK_EQ_U64(bl.devices[0].reserved, 0);
    cmt_block_layer_free(&bl);
}

/* A listener sees each tensor allocated (placed, counted, numbered, its
 * thread) and each free requested (still counted), and keeps a tag. */
static uint64_t told_alloc, told_free, told_allocated_then;

static void on_tensor(void *ctx, const struct cmt_bl_device *d, struct cmt_bl_block *b, bool allocated, uint64_t ts)
{
    (void)ctx;
    (void)ts;
    if (allocated) {
        told_alloc++;
        CHECK_EQ_U64(b->seq, d->allocs);
        CHECK_EQ_U64(b->tid, 77);
        b->tag = 1000 + b->seq;
    } else {
        told_free++;
        CHECK_EQ_U64(b->tag, 1000 + b->seq);
        told_allocated_then = d->allocated;
    }
}

static void test_listener(void)
{
    struct cmt_block_layer bl;
    cmt_block_layer_init(&bl);
    cmt_block_layer_listen(&bl, &(struct cmt_bl_listener){.on_tensor = on_tensor});
    bl.event_tid = 77;
    ev(&bl, CMT_API_TORCH_SEGMENT_ALLOC, 0, 20 * MiB, 0);
    ev(&bl, CMT_API_TORCH_ALLOC, 0, 4 * MiB, 1);
    ev(&bl, CMT_API_TORCH_ALLOC, 4 * MiB, 8 * MiB, 2);
    ev(&bl, CMT_API_TORCH_FREE_REQUESTED, 0, 4 * MiB, 0);
    CHECK_EQ_U64(told_alloc, 2);
    CHECK_EQ_U64(told_free, 1);
    CHECK_EQ_U64(told_allocated_then, 12 * MiB); /* told before it is uncounted */
    CHECK_EQ_U64(bl.devices[0].allocated, 8 * MiB);
    CHECK(cmt_bl_segment_at(&bl, 0, BASE));
    CHECK(!cmt_bl_segment_at(&bl, 0, BASE + 4 * MiB));
    CHECK(!cmt_bl_segment_at(&bl, 1, BASE));
    cmt_block_layer_free(&bl);
}

int main(void)
{
    test_listener();
    CHECK_EQ_U64(cmt_bl_round(1), 512);
    CHECK_EQ_U64(cmt_bl_round(512), 512);
    CHECK_EQ_U64(cmt_bl_round(513), 1024);
    test_double_sequence();
    test_oom_verdicts();
    test_expandable();
    test_inconsistencies();
    printf("ok\n");
    return 0;
}
