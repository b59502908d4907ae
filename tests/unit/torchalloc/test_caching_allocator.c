/* SPDX-License-Identifier: MIT */
/* The caching allocator model (analyzer/torchalloc/caching_allocator.h),
 * rule by rule, each on a hand-built sequence of requests with the reserve
 * PyTorch 2.11's allocator reaches on it, worked out from its source
 * (docs/design.md, "What if"): rounding, the small pool's 2 MiB segments,
 * the 20 MiB segments requests under 10 MiB share and split, a segment per
 * larger request, max_split_size and its oversize rules, freeing oversize
 * blocks and then the whole cache before failing, expandable segments
 * growing and unmapping, garbage collection under a fraction, streams,
 * releases pending on other streams, empty_cache. */
#include "caching_allocator.h"
#include "ta_rounding.h"

#include "test_util.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static struct cmt_ta_allocator *model(const char *conf)
{
    struct cmt_ta_settings s;
    char err[160];
    CHECK(cmt_ta_settings_parse(conf, &s, err, sizeof err) == 0);
    struct cmt_ta_allocator *a = cmt_ta_new(&s, 8 * GiB);
    CHECK(a != NULL);
    return a;
}

static int alloc(struct cmt_ta_allocator *a, uint32_t slot, uint64_t size, uint64_t stream)
{
    return cmt_ta_malloc(a, slot, size, stream, 0, 0, NULL);
}

static void release(struct cmt_ta_allocator *a, uint32_t slot)
{
    cmt_ta_free_requested(a, slot);
    cmt_ta_free_completed(a, slot);
}

#define ST(a) cmt_ta_stats(a)

static void test_settings(void)
{
    struct cmt_ta_settings s;
    char err[160];
    CHECK(cmt_ta_settings_parse("", &s, err, sizeof err) == 0);
    CHECK_EQ_U64(s.max_split_size, UINT64_MAX);
    CHECK_EQ_U64(s.large_segment_size, 20 * MiB);
    CHECK_EQ_U64(s.max_non_split_rounding_size, 20 * MiB);
    CHECK_STR(cmt_ta_settings_label(&s), "the defaults");
    CHECK(cmt_ta_settings_parse("default", &s, err, sizeof err) == 0 && s.text[0] == '\0');
    CHECK(cmt_ta_settings_parse(" expandable_segments : True , max_split_size_mb:128", &s, err, sizeof err) == 0);
    CHECK(s.expandable_segments);
    CHECK_EQ_U64(s.max_split_size, 128 * MiB);
    CHECK_STR(s.text, "expandable_segments:True,max_split_size_mb:128");
    /* list form: up to 64 MiB 8 divisions, 256-512 MiB 4, 1-2 GiB 4, from 2 GiB 1; 128-256 MiB untouched */
    CHECK(cmt_ta_settings_parse("roundup_power2_divisions:[64:8,256:4,1024:4,>:1]", &s, err, sizeof err) == 0);
    CHECK_EQ_U64(cmt_ta_settings_divisions(&s, 1000), 8);
    CHECK_EQ_U64(cmt_ta_settings_divisions(&s, 100 * MiB), 8);
    CHECK_EQ_U64(cmt_ta_settings_divisions(&s, 150 * MiB), 0);
    CHECK_EQ_U64(cmt_ta_settings_divisions(&s, 300 * MiB), 4);
    CHECK_EQ_U64(cmt_ta_settings_divisions(&s, 1500 * MiB), 4);
    CHECK_EQ_U64(cmt_ta_settings_divisions(&s, 3 * GiB), 1);
    /* large_segment_size_mb raises max_split_size_mb's floor, whatever the order */
    CHECK(cmt_ta_settings_parse("max_split_size_mb:30,large_segment_size_mb:40", &s, err, sizeof err) != 0);
    CHECK(strstr(err, "at least 40") != NULL);
    CHECK(cmt_ta_settings_parse("max_split_size_mb:10", &s, err, sizeof err) != 0);
    CHECK(cmt_ta_settings_parse("garbage_collection_threshold:1.5", &s, err, sizeof err) != 0);
    CHECK(cmt_ta_settings_parse("roundup_power2_divisions:3", &s, err, sizeof err) != 0);
    CHECK(cmt_ta_settings_parse("backend:cudaMallocAsync", &s, err, sizeof err) != 0);
    CHECK(strstr(err, "stream-ordered") != NULL);
    CHECK(cmt_ta_settings_parse("no_such_key:1", &s, err, sizeof err) != 0);
    CHECK(strstr(err, "no_such_key") != NULL);
    CHECK(cmt_ta_settings_parse("pinned_use_cuda_host_register:True,backend:native", &s, err, sizeof err) == 0);
    CHECK(cmt_ta_settings_parse("garbage_collection_threshold:0.6", &s, err, sizeof err) == 0);
    CHECK(cmt_ta_settings_gc_inert(&s));
    CHECK(cmt_ta_settings_parse("garbage_collection_threshold:0.6,per_process_memory_fraction:0.8", &s, err,
                                sizeof err) == 0);
    CHECK(!cmt_ta_settings_gc_inert(&s) && s.fraction_set);
}

static void test_rounding(void)
{
    struct cmt_ta_settings s;
    char err[160];
    CHECK(cmt_ta_settings_parse("", &s, err, sizeof err) == 0);
    CHECK_EQ_U64(cmt_ta_round_size(&s, 1), 512);
    CHECK_EQ_U64(cmt_ta_round_size(&s, 513), 1024);
    CHECK_EQ_U64(cmt_ta_round_size(&s, 1300 * MiB + 1), 1300 * MiB + 512);
    CHECK_EQ_U64(cmt_ta_allocation_size(&s, 512), 2 * MiB);
    CHECK_EQ_U64(cmt_ta_allocation_size(&s, MiB), 2 * MiB);
    CHECK_EQ_U64(cmt_ta_allocation_size(&s, MiB + 512), 20 * MiB);
    CHECK_EQ_U64(cmt_ta_allocation_size(&s, 10 * MiB - 512), 20 * MiB);
    CHECK_EQ_U64(cmt_ta_allocation_size(&s, 10 * MiB), 10 * MiB);
    CHECK_EQ_U64(cmt_ta_allocation_size(&s, 12 * MiB + 512), 14 * MiB);
    CHECK(cmt_ta_settings_parse("roundup_power2_divisions:4", &s, err, sizeof err) == 0);
    /* 1300 MiB lies between 1024 and 2048 MiB: steps of 256 MiB */
    CHECK_EQ_U64(cmt_ta_round_size(&s, 1300 * MiB), 1536 * MiB);
    CHECK_EQ_U64(cmt_ta_round_size(&s, 1280 * MiB), 1280 * MiB);
    CHECK_EQ_U64(cmt_ta_round_size(&s, 1 * GiB), 1 * GiB);
    /* at most 512 x divisions: plain 512-byte rounding */
    CHECK_EQ_U64(cmt_ta_round_size(&s, 1200), 1536);
    CHECK_EQ_U64(cmt_ta_round_size(&s, 3000), 3072);
    CHECK_EQ_U64(cmt_ta_roundup_power2_next_division(1200, 4), 1280);
}

/* Requests up to 1 MiB share 2 MiB segments. */
static void test_small_pool(void)
{
    struct cmt_ta_allocator *a = model("");
    CHECK(alloc(a, 0, 1000, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 2 * MiB);
    CHECK_EQ_U64(ST(a)->allocated, 1024);
    CHECK(alloc(a, 1, MiB, 0) == 0); /* the segment's rest serves it */
    CHECK_EQ_U64(ST(a)->reserved, 2 * MiB);
    CHECK_EQ_U64(ST(a)->served_from_cache, 1);
    CHECK(alloc(a, 2, MiB, 0) == 0); /* 2 MiB - 1024 - 1 MiB left: a second segment */
    CHECK_EQ_U64(ST(a)->reserved, 4 * MiB);
    CHECK_EQ_U64(ST(a)->segments_made, 2);
    CHECK_EQ_U64(ST(a)->cls[CMT_TA_CLASS_SMALL].reserved, 4 * MiB);
    cmt_ta_free_allocator(a);
}

/* 1-10 MiB requests split 20 MiB segments; a rest of 1 MiB or less stays
 * with the block. Larger requests get a segment of their own, rounded to
 * 2 MiB, split when more than 1 MiB is left over. */
static void test_large_and_huge_segments(void)
{
    struct cmt_ta_allocator *a = model("");
    CHECK(alloc(a, 0, 5 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 20 * MiB);
    CHECK_EQ_U64(ST(a)->allocated, 5 * MiB);
    CHECK(alloc(a, 1, 14 * MiB + MiB / 2, 0) == 0); /* 15 MiB free, 0.5 MiB would be left: not split */
    CHECK_EQ_U64(ST(a)->reserved, 20 * MiB);
    CHECK_EQ_U64(ST(a)->allocated, 20 * MiB);
    CHECK(alloc(a, 2, 12 * MiB + 1, 0) == 0); /* 12 MiB + 512 in a 14 MiB segment, split */
    CHECK_EQ_U64(ST(a)->reserved, 34 * MiB);
    CHECK_EQ_U64(ST(a)->allocated, 32 * MiB + 512);
    CHECK_EQ_U64(ST(a)->cls[CMT_TA_CLASS_LARGE].reserved, 20 * MiB);
    CHECK_EQ_U64(ST(a)->cls[CMT_TA_CLASS_HUGE].reserved, 14 * MiB);
    CHECK(alloc(a, 3, 1 * MiB + 1, 0) == 0); /* the huge segment's 2 MiB - 512 rest serves it, whole */
    CHECK_EQ_U64(ST(a)->reserved, 34 * MiB);
    CHECK_EQ_U64(ST(a)->allocated, 34 * MiB);
    /* released, the blocks join again: one 20 MiB block serves 20 MiB */
    release(a, 0);
    release(a, 1);
    CHECK(alloc(a, 4, 20 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 34 * MiB);
    CHECK_EQ_U64(ST(a)->peak_reserved, 34 * MiB);
    CHECK_EQ_U64(ST(a)->peak_allocated, 34 * MiB);
    cmt_ta_free_allocator(a);
}

/* Blocks of max_split_size or more are never split and serve only requests
 * at least that large and at most max_non_split_rounding_mb (20 MiB)
 * smaller than themselves. */
static void test_max_split_size(void)
{
    struct cmt_ta_allocator *d = model(""), *m = model("max_split_size_mb:64");
    for (int k = 0; k < 2; k++) {
        struct cmt_ta_allocator *a = k ? m : d;
        CHECK(alloc(a, 0, 100 * MiB, 0) == 0);
        release(a, 0);
        CHECK(alloc(a, 1, 30 * MiB, 0) == 0);
    }
    CHECK_EQ_U64(ST(d)->reserved, 100 * MiB); /* carved from the cached 100 MiB */
    CHECK_EQ_U64(ST(m)->reserved, 130 * MiB); /* an oversize block serves no 30 MiB request */
    release(m, 1);
    CHECK(alloc(m, 2, 90 * MiB, 0) == 0); /* within 20 MiB of 100 MiB: served, unsplit */
    CHECK_EQ_U64(ST(m)->reserved, 130 * MiB);
    CHECK_EQ_U64(ST(m)->allocated, 100 * MiB);
    CHECK(alloc(m, 3, 70 * MiB, 0) == 0); /* neither the 30 MiB block (too small) nor none: a new one */
    CHECK_EQ_U64(ST(m)->reserved, 200 * MiB);
    cmt_ta_free_allocator(d);
    cmt_ta_free_allocator(m);
}

/* Before failing: free an oversize cached block (max_split_size set), then
 * everything cached and unsplit, retry. */
static void test_release_before_failing(void)
{
    struct cmt_ta_allocator *a = model("max_split_size_mb:64");
    cmt_ta_set_limit(a, 150 * MiB);
    CHECK(alloc(a, 0, 100 * MiB, 0) == 0);
    release(a, 0);
    CHECK(alloc(a, 1, 60 * MiB, 0) == 0); /* 160 MiB will not fit: the cached 100 MiB goes */
    CHECK_EQ_U64(ST(a)->reserved, 60 * MiB);
    CHECK_EQ_U64(ST(a)->peak_reserved, 100 * MiB);
    CHECK_EQ_U64(ST(a)->segments_released, 1);
    CHECK_EQ_U64(ST(a)->released_for_retry_bytes, 100 * MiB);
    CHECK_EQ_U64(ST(a)->retries, 0);
    cmt_ta_free_allocator(a);

    a = model("");
    cmt_ta_set_limit(a, 100 * MiB);
    CHECK(alloc(a, 0, 60 * MiB, 0) == 0);
    release(a, 0);
    CHECK(alloc(a, 1, 70 * MiB, 0) == 0); /* the whole cache freed, then the retry */
    CHECK_EQ_U64(ST(a)->reserved, 70 * MiB);
    CHECK_EQ_U64(ST(a)->retries, 1);
    struct cmt_ta_failure f;
    CHECK(cmt_ta_malloc(a, 2, 40 * MiB, 0, 0, 0, &f) == 1); /* 110 MiB: out of memory */
    CHECK_EQ_U64(f.rounded, 40 * MiB);
    CHECK_EQ_U64(f.allocated, 70 * MiB);
    CHECK_EQ_U64(f.reserved, 70 * MiB);
    CHECK_EQ_U64(f.limit, 100 * MiB);
    CHECK(!f.by_fraction);
    CHECK_EQ_U64(ST(a)->failures, 1);
    CHECK(!cmt_ta_slot_live(a, 2));
    cmt_ta_free_allocator(a);
}

/* A split segment cannot be freed: its free bytes strand the request. */
static void test_fragmentation_failure(void)
{
    struct cmt_ta_allocator *a = model("");
    cmt_ta_set_limit(a, 40 * MiB);
    CHECK(alloc(a, 0, 5 * MiB, 0) == 0);  /* [5 | 15 free] of 20 MiB */
    CHECK(alloc(a, 1, 9 * MiB, 0) == 0);  /* [5 | 9 | 6 free] */
    CHECK(alloc(a, 2, 15 * MiB, 0) == 0); /* its own 16 MiB segment, 1 MiB rest kept */
    release(a, 1);                        /* [5 | 15 free] */
    struct cmt_ta_failure f;
    CHECK(cmt_ta_malloc(a, 3, 18 * MiB, 0, 0, 0, &f) == 1);
    CHECK_EQ_U64(f.reserved, 36 * MiB);
    CHECK_EQ_U64(f.allocated, 21 * MiB);
    CHECK(f.allocated + f.rounded <= f.limit); /* it would fit, but for the stranded 15 MiB */
    CHECK_EQ_U64(ST(a)->segments_released, 0);
    cmt_ta_free_allocator(a);
}

/* Expandable segments map 20 MiB pages (2 MiB in the small pool) as
 * requests need them, joining the free block before the new pages, and
 * unmap free pages on empty_cache. */
static void test_expandable_segments(void)
{
    struct cmt_ta_allocator *a = model("expandable_segments:True");
    CHECK(alloc(a, 0, 5 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 20 * MiB);
    CHECK_EQ_U64(ST(a)->maps, 1);
    CHECK_EQ_U64(ST(a)->expandable_segments, 1);
    CHECK(alloc(a, 1, 30 * MiB, 0) == 0); /* the free 15 MiB and one more page */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK_EQ_U64(ST(a)->maps, 2);
    CHECK_EQ_U64(ST(a)->allocated, 35 * MiB);
    CHECK(alloc(a, 2, 4 * MiB, 0) == 0); /* the 5 MiB left after it */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK(alloc(a, 3, 1000, 0) == 0); /* the small pool's own segment: one 2 MiB page */
    CHECK_EQ_U64(ST(a)->reserved, 42 * MiB);
    CHECK_EQ_U64(ST(a)->expandable_segments, 2);
    CHECK_EQ_U64(ST(a)->cls[CMT_TA_CLASS_EXPANDABLE].reserved, 42 * MiB);
    release(a, 1);
    cmt_ta_empty_cache(a); /* the 30 MiB free: only its whole page, [20, 40) less what 2 holds */
    CHECK_EQ_U64(ST(a)->reserved, 42 * MiB);
    release(a, 2);
    cmt_ta_empty_cache(a); /* [5, 40) free: the page from 20 MiB */
    CHECK_EQ_U64(ST(a)->reserved, 22 * MiB);
    CHECK_EQ_U64(ST(a)->unmapped_bytes, 20 * MiB);
    release(a, 0);
    release(a, 3);
    cmt_ta_empty_cache(a); /* everything: both segments' ranges go */
    CHECK_EQ_U64(ST(a)->reserved, 0);
    CHECK_EQ_U64(ST(a)->unmapped_bytes, 42 * MiB);
    CHECK_EQ_U64(ST(a)->peak_reserved, 42 * MiB);
    CHECK(alloc(a, 4, 5 * MiB, 0) == 0); /* a new segment */
    CHECK_EQ_U64(ST(a)->expandable_segments, 3);
    CHECK_EQ_U64(ST(a)->reserved, 20 * MiB);
    cmt_ta_free_allocator(a);

    /* out of memory: mapping is all or nothing */
    a = model("expandable_segments:True");
    cmt_ta_set_limit(a, 50 * MiB);
    CHECK(alloc(a, 0, 30 * MiB, 0) == 0); /* two pages */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    struct cmt_ta_failure f;
    CHECK(cmt_ta_malloc(a, 1, 15 * MiB, 0, 0, 0, &f) == 1); /* 10 MiB free + one page of 20: 60 MiB */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK_EQ_U64(f.allocated, 30 * MiB);
    CHECK(cmt_ta_malloc(a, 2, 10 * MiB, 0, 0, 0, &f) == 0); /* the free rest */
    cmt_ta_free_allocator(a);
}

/* garbage_collection_threshold frees old cached blocks when a request needs
 * a new segment, but only under a memory fraction. */
static void test_garbage_collection(void)
{
    struct cmt_ta_allocator *off = model("garbage_collection_threshold:0.5"),
                            *on = model("garbage_collection_threshold:0.5");
    cmt_ta_set_allowed(on, 200 * MiB); /* threshold 100 MiB */
    for (int k = 0; k < 2; k++) {
        struct cmt_ta_allocator *a = k ? on : off;
        CHECK(alloc(a, 0, 60 * MiB, 0) == 0);
        CHECK(alloc(a, 1, 50 * MiB, 0) == 0);
        release(a, 0);
        release(a, 1);
        CHECK(alloc(a, 2, 70 * MiB, 0) == 0); /* no cached block fits */
    }
    CHECK_EQ_U64(ST(off)->reserved, 180 * MiB);
    CHECK_EQ_U64(ST(off)->gc_released_bytes, 0);
    CHECK_EQ_U64(ST(on)->reserved, 70 * MiB); /* 110 MiB reserved over 100: both as old as the average */
    CHECK_EQ_U64(ST(on)->gc_released_bytes, 110 * MiB);
    CHECK_EQ_U64(ST(on)->peak_reserved, 110 * MiB);
    struct cmt_ta_failure f;
    CHECK(cmt_ta_malloc(on, 3, 140 * MiB, 0, 0, 0, &f) == 1); /* 210 MiB over the fraction's 200 */
    CHECK(f.by_fraction);
    CHECK_EQ_U64(f.limit, 200 * MiB);
    cmt_ta_free_allocator(off);
    cmt_ta_free_allocator(on);
}

/* Each stream has its cached blocks; a block used on another stream is
 * reusable only once that use is over (FREE_COMPLETED). */
static void test_streams(void)
{
    struct cmt_ta_allocator *a = model("");
    CHECK(alloc(a, 0, 5 * MiB, 1) == 0);
    release(a, 0);
    CHECK(alloc(a, 1, 5 * MiB, 2) == 0); /* stream 1's cached 20 MiB serves no stream 2 request */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK(alloc(a, 2, 5 * MiB, 1) == 0); /* stream 1's own */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    cmt_ta_free_allocator(a);

    a = model("");
    CHECK(alloc(a, 0, 20 * MiB, 0) == 0);
    cmt_ta_free_requested(a, 0); /* used on another stream: pending */
    CHECK_EQ_U64(ST(a)->allocated, 0);
    CHECK(alloc(a, 1, 20 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    cmt_ta_free_completed(a, 0);
    CHECK(alloc(a, 2, 20 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    /* a completion with no request before it is both (a cudaFree with the cache off) */
    cmt_ta_free_completed(a, 2);
    CHECK_EQ_U64(ST(a)->allocated, 20 * MiB);
    CHECK(alloc(a, 3, 20 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    cmt_ta_free_allocator(a);

    /* before failing, pending releases complete */
    a = model("");
    cmt_ta_set_limit(a, 50 * MiB);
    CHECK(alloc(a, 0, 20 * MiB, 0) == 0);
    CHECK(alloc(a, 1, 20 * MiB, 0) == 0);
    cmt_ta_free_requested(a, 0);
    CHECK(alloc(a, 2, 20 * MiB, 0) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK_EQ_U64(ST(a)->retries, 1);
    cmt_ta_free_completed(a, 0); /* completed already: nothing */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK(cmt_ta_slot_live(a, 2) && cmt_ta_slot_live(a, 1) && !cmt_ta_slot_live(a, 0));
    cmt_ta_free_allocator(a);
}

/* empty_cache releases the unsplit cached segments, not those holding a
 * tensor. */
static void test_empty_cache(void)
{
    struct cmt_ta_allocator *a = model("");
    CHECK(alloc(a, 0, 5 * MiB, 0) == 0);
    CHECK(alloc(a, 1, 16 * MiB, 0) == 0); /* more than the 15 MiB left: a segment of its own */
    release(a, 1);
    CHECK_EQ_U64(ST(a)->reserved, 36 * MiB);
    cmt_ta_empty_cache(a);
    CHECK_EQ_U64(ST(a)->reserved, 20 * MiB);
    CHECK_EQ_U64(ST(a)->empty_cache_released_bytes, 16 * MiB);
    CHECK_EQ_U64(ST(a)->empty_caches, 1);
    release(a, 0);
    cmt_ta_empty_cache(a);
    CHECK_EQ_U64(ST(a)->reserved, 0);
    CHECK_EQ_U64(ST(a)->segments_released, 2);
    cmt_ta_free_allocator(a);
}

/* The reserved peak's snapshot: taken after the request that reached it. */
static void test_peak_snapshot(void)
{
    struct cmt_ta_allocator *a = model("");
    CHECK(alloc(a, 0, 1000, 0) == 0);
    CHECK(alloc(a, 1, 5 * MiB, 0) == 0);
    release(a, 1);
    CHECK(alloc(a, 2, 3 * MiB, 0) == 0);
    const struct cmt_ta_stats *s = ST(a);
    CHECK_EQ_U64(s->peak_reserved, 22 * MiB);
    CHECK_EQ_U64(s->allocated_at_peak, 1024 + 5 * MiB);
    CHECK_EQ_U64(s->at_peak[CMT_TA_CLASS_SMALL].reserved, 2 * MiB);
    CHECK_EQ_U64(s->at_peak[CMT_TA_CLASS_SMALL].allocated, 1024);
    CHECK_EQ_U64(s->at_peak[CMT_TA_CLASS_LARGE].reserved, 20 * MiB);
    CHECK_EQ_U64(s->at_peak[CMT_TA_CLASS_LARGE].allocated, 5 * MiB);
    CHECK_STR(cmt_ta_class_key(CMT_TA_CLASS_HUGE), "huge");
    cmt_ta_free_allocator(a);
}

/* Private pools (CUDA graphs, torch.cuda.MemPool) keep their own blocks. */
static void test_private_pool(void)
{
    struct cmt_ta_allocator *a = model("");
    CHECK(cmt_ta_malloc(a, 0, 5 * MiB, 0, 1, 7, NULL) == 0);
    release(a, 0);
    CHECK(alloc(a, 1, 5 * MiB, 0) == 0); /* not from the graph's pool */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    CHECK(cmt_ta_malloc(a, 2, 5 * MiB, 0, 1, 7, NULL) == 0);
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    cmt_ta_empty_cache(a); /* the graph's pool keeps its segment */
    CHECK_EQ_U64(ST(a)->reserved, 40 * MiB);
    cmt_ta_free_allocator(a);
}

int main(void)
{
    test_settings();
    test_rounding();
    test_small_pool();
    test_large_and_huge_segments();
    test_max_split_size();
    test_release_before_failing();
    test_fragmentation_failure();
    test_expandable_segments();
    test_garbage_collection();
    test_streams();
    test_empty_cache();
    test_peak_snapshot();
    test_private_pool();
    printf("caching allocator model: ok\n");
    return 0;
}
