/* SPDX-License-Identifier: MIT */
/* The forensics' building blocks on their own: hole scanning, the ordered
 * address index (neighbours, who opened a hole), size churn counting and
 * ranking, bounded series, and every verdict rule at its boundary. */
#include <stdint.h>
#include <stdlib.h>

#include "addr_index.h"
#include "churn.h"
#include "forensics.h"
#include "holes.h"
#include "oom_verdict.h"
#include "replay.h"
#include "test_util.h"

#define MiB (1024ull * 1024ull)
#define GiB (1024ull * MiB)

static struct cmt_interval iv(uint64_t addr, uint64_t end, uint32_t stack)
{
    return (struct cmt_interval){.addr = addr, .end = end, .ts = addr, .stack = stack};
}

static void test_hole_scan(void)
{
    /* Gaps: 512 (a hole: exactly the minimum), 200 (padding), 4000 (a hole). */
    struct cmt_interval v[] = {iv(0, 100, 1), iv(612, 700, 2), iv(900, 1000, 3), iv(5000, 6000, 4)};
    struct cmt_hole_stats st;
    struct cmt_hole top[2];
    size_t n_top;
    cmt_holes_scan(v, 4, NULL, &st, top, 2, &n_top);
    CHECK_EQ_U64(st.allocations, 4);
    CHECK_EQ_U64(st.lo, 0);
    CHECK_EQ_U64(st.hi, 6000);
    CHECK_EQ_U64(st.live_bytes, 100 + 88 + 100 + 1000);
    CHECK_EQ_U64(st.count, 2);
    CHECK_EQ_U64(st.total, 4512);
    CHECK_EQ_U64(st.largest, 4000);
    CHECK_EQ_U64(st.padding, 200);
    CHECK_EQ_U64(cmt_holes_stranded(&st), 512);
    CHECK(cmt_holes_ratio(&st) > 0.1134 && cmt_holes_ratio(&st) < 0.1135); /* 1 - 4000/4512 */
    CHECK_EQ_U64(n_top, 2);
    CHECK_EQ_U64(top[0].addr, 1000);
    CHECK_EQ_U64(top[0].size, 4000);
    CHECK_EQ_U64(top[0].left, 2);
    CHECK_EQ_U64(top[0].right, 3);
    CHECK_EQ_U64(top[1].addr, 100);
    CHECK_EQ_U64(top[1].size, 512);

    /* Only the largest kept; a 511-byte gap is padding. */
    struct cmt_interval w[] = {iv(0, 100, 1), iv(611, 700, 2)};
    cmt_holes_scan(w, 2, NULL, &st, top, 1, &n_top);
    CHECK_EQ_U64(st.count, 0);
    CHECK_EQ_U64(st.padding, 511);
    CHECK_EQ_U64(n_top, 0);
    CHECK(cmt_holes_ratio(&st) == 0.0);

    /* Overlaps (a damaged trace): the gap starts at the furthest end. */
    struct cmt_interval o[] = {iv(0, 1000, 1), iv(500, 600, 2), iv(2000, 2100, 3)};
    cmt_holes_scan(o, 3, NULL, &st, top, 1, &n_top);
    CHECK_EQ_U64(st.count, 1);
    CHECK_EQ_U64(st.total, 1000);
    CHECK_EQ_U64(top[0].left, 0);
    CHECK_EQ_U64(top[0].right, 2);
    CHECK_EQ_U64(st.hi, 2100);

    cmt_holes_scan(NULL, 0, NULL, &st, top, 1, &n_top);
    CHECK_EQ_U64(st.allocations, 0);
    CHECK_EQ_U64(st.hi, 0);
}

static void test_hole_address_space(void)
{
    /* A device of 1 MiB; plain allocations around a VMM reservation, and
     * 2 MiB higher. Gaps: 4000 (a hole), the reservation's [10000, 20000)
     * between 10000 and 30000 (address space: the reservation touches it
     * by one byte or more), 1 MiB exactly (a hole: no wider than the
     * device), 1 MiB + 1 (address space: wider). */
    struct cmt_interval v[] = {iv(0, 1000, 1),
                               iv(5000, 10000, 2),
                               iv(30000, 31000, 3),
                               iv(31000 + MiB, 32000 + MiB, 4),
                               iv(32001 + 2 * MiB, 33000 + 2 * MiB, 5)};
    struct cmt_interval reserves[] = {iv(10000, 20000, 9)};
    struct cmt_span_bounds b = {reserves, 1, MiB};
    struct cmt_hole_stats st;
    struct cmt_hole top[4];
    size_t n_top;
    cmt_holes_scan(v, 5, &b, &st, top, 4, &n_top);
    CHECK_EQ_U64(st.count, 2);
    CHECK_EQ_U64(st.total, 4000 + MiB);
    CHECK_EQ_U64(st.largest, MiB);
    CHECK_EQ_U64(st.address_space, 20000 + MiB + 1);
    CHECK_EQ_U64(st.between_regions, 0);
    CHECK_EQ_U64(cmt_holes_span_bytes(&st), st.live_bytes + st.total);
    CHECK_EQ_U64(n_top, 2);
    CHECK_EQ_U64(top[0].addr, 31000);
    CHECK_EQ_U64(top[1].addr, 1000);
    /* Without bounds (no sample, no reservation) every gap is a hole. */
    cmt_holes_scan(v, 5, NULL, &st, top, 4, &n_top);
    CHECK_EQ_U64(st.count, 4);
    CHECK_EQ_U64(st.address_space, 0);
    /* A reservation ending where the gap starts, or starting where it ends,
     * is not in it. */
    struct cmt_interval edge[] = {iv(0, 1000, 1), iv(5000, 6000, 2)};
    struct cmt_interval outside[] = {iv(500, 1000, 9), iv(5000, 5500, 9)};
    struct cmt_span_bounds e = {outside, 2, 0};
    cmt_holes_scan(edge, 2, &e, &st, top, 4, &n_top);
    CHECK_EQ_U64(st.count, 1);
    CHECK_EQ_U64(st.total, 4000);
    CHECK_EQ_U64(st.address_space, 0);
    /* The index of reservations answers the same for a release's hole:
     * [500, 1000) and [5000, 5500), 200 of them past a block of 64. */
    struct cmt_addr_index x;
    cmt_addr_index_init(&x);
    CHECK(!cmt_addr_index_overlaps(&x, 0, 100));
    for (int i = 0; i < 200; i++) {
        struct cmt_interval r = iv(100000 + (uint64_t)i * 1000, 100000 + (uint64_t)i * 1000 + 500, 9);
        CHECK(cmt_addr_index_insert(&x, &r) == 0);
    }
    CHECK(cmt_addr_index_insert(&x, &outside[1]) == 0);
    CHECK(cmt_addr_index_insert(&x, &outside[0]) == 0);
    CHECK(!cmt_addr_index_overlaps(&x, 0, 500));
    CHECK(cmt_addr_index_overlaps(&x, 0, 501));
    CHECK(!cmt_addr_index_overlaps(&x, 1000, 5000));
    CHECK(cmt_addr_index_overlaps(&x, 999, 5000));
    CHECK(cmt_addr_index_overlaps(&x, 1000, 5001));
    CHECK(!cmt_addr_index_overlaps(&x, 100000 + 150 * 1000 + 500, 100000 + 151 * 1000));
    CHECK(cmt_addr_index_overlaps(&x, 100000 + 150 * 1000 + 499, 100000 + 151 * 1000));
    CHECK(cmt_addr_index_overlaps(&x, 100000 + 150 * 1000 + 500, 100000 + 151 * 1000 + 1));
    CHECK(!cmt_addr_index_overlaps(&x, 100000 + 199 * 1000 + 500, UINT64_MAX));
    cmt_addr_index_free(&x);
    size_t cursor = 0;
    CHECK(cmt_holes_gap_kind(&e, &cursor, 999, 5001, 0, 0) == CMT_GAP_ADDRESS_SPACE);
    cursor = 0;
    CHECK(cmt_holes_gap_kind(&e, &cursor, 1000, 5000, 0, 1) == CMT_GAP_BETWEEN_REGIONS);
}

static struct cmt_interval pool_iv(uint64_t addr, uint64_t end, uint32_t stack)
{
    struct cmt_interval v = iv(addr, end, stack);
    v.region = CMT_REGION_POOL;
    return v;
}

static void test_hole_regions(void)
{
    /* Plain allocations low, a pool's a terabyte up, as a GPU driver places
     * them: holes of 4000 (plain) and 3000 (pool); the terabyte between the
     * regions is neither a hole nor span. */
    const uint64_t up = 1ull << 40;
    struct cmt_interval v[] = {iv(0, 1000, 1), iv(5000, 6000, 2), pool_iv(up, up + 1000, 3),
                               pool_iv(up + 4000, up + 5000, 4)};
    struct cmt_hole_stats st;
    struct cmt_hole top[3];
    size_t n_top;
    cmt_holes_scan(v, 4, NULL, &st, top, 3, &n_top);
    CHECK_EQ_U64(st.count, 2);
    CHECK_EQ_U64(st.total, 7000);
    CHECK_EQ_U64(st.largest, 4000);
    CHECK_EQ_U64(st.between_regions, up - 6000);
    CHECK_EQ_U64(cmt_holes_span_bytes(&st), 6000 + 5000);
    CHECK_EQ_U64(st.lo, 0);
    CHECK_EQ_U64(st.hi, up + 5000);
    CHECK_EQ_U64(n_top, 2);
    CHECK_EQ_U64(top[0].addr, 1000);
    CHECK_EQ_U64(top[1].addr, up + 1000);
    CHECK_EQ_U64(top[1].left, 2);
    CHECK_EQ_U64(top[1].right, 3);

    /* Interleaved regions (one heap, as on the simulated device): a gap with
     * a neighbour of each region is left out, one inside a region counts. */
    struct cmt_interval w[] = {iv(0, 1000, 1), pool_iv(2000, 3000, 2), iv(3000, 4000, 3), iv(6000, 7000, 4)};
    cmt_holes_scan(w, 4, NULL, &st, top, 3, &n_top);
    CHECK_EQ_U64(st.count, 1);
    CHECK_EQ_U64(st.total, 2000);
    CHECK_EQ_U64(st.between_regions, 1000);
    CHECK_EQ_U64(cmt_holes_span_bytes(&st), 6000);

    /* The ordered index agrees: a release with neighbours of two regions
     * opens no hole, and an allocation landing there inherits no opener. */
    struct cmt_addr_index x;
    cmt_addr_index_init(&x);
    struct cmt_interval a = iv(0, 100, 1), b = iv(1000, 1100, 2), c = pool_iv(up, up + 100, 3);
    CHECK(cmt_addr_index_insert(&x, &a) == 0);
    CHECK(cmt_addr_index_insert(&x, &b) == 0);
    CHECK(cmt_addr_index_insert(&x, &c) == 0);
    struct cmt_addr_removal rm;
    cmt_addr_index_remove(&x, 1000, 2, 50, &rm);
    CHECK(rm.found && !rm.interior);
    struct cmt_interval d = iv(2000, 2100, 4);
    CHECK(cmt_addr_index_insert(&x, &d) == 0);
    struct cmt_interval *buf = NULL;
    size_t cap = 0;
    CHECK_EQ_U64(cmt_addr_index_copy(&x, &buf, &cap), 3);
    CHECK_EQ_U64(buf[0].opener, 0);
    CHECK_EQ_U64(buf[1].addr, 2000);
    CHECK_EQ_U64(buf[1].opener, 0);
    /* Between two plain neighbours it does. */
    cmt_addr_index_remove(&x, 2000, 4, 60, &rm);
    CHECK(rm.found && !rm.interior);
    struct cmt_interval e = iv(5000, 5100, 5);
    CHECK(cmt_addr_index_insert(&x, &e) == 0);
    CHECK(cmt_addr_index_insert(&x, &d) == 0);
    cmt_addr_index_remove(&x, 2000, 4, 70, &rm);
    CHECK(rm.found && rm.interior);
    CHECK_EQ_U64(rm.hole_size, 5000 - 100);
    free(buf);
    cmt_addr_index_free(&x);
}

static void test_intervals_of_device(void)
{
    struct cmt_live_set s;
    CHECK(cmt_live_set_init(&s) == 0);
    struct cmt_live l = {.ns = CMT_NS_POINTER, .kind = CMT_KIND_DEVICE, .device = 0};
    uint64_t addrs[] = {0x5000, 0x1000, 0x3000};
    for (int i = 0; i < 3; i++) {
        l.addr = addrs[i];
        l.size = 0x800;
        CHECK(cmt_live_set_put(&s, &l, NULL) == 0);
    }
    /* Not in the span: another device, managed memory, a VMM mapping. */
    struct cmt_live other = l;
    other.addr = 0x2000, other.device = 1;
    CHECK(cmt_live_set_put(&s, &other, NULL) == 0);
    other.addr = 0x2100, other.device = 0, other.kind = CMT_KIND_MANAGED;
    CHECK(cmt_live_set_put(&s, &other, NULL) == 0);
    other.addr = 0x2200, other.kind = CMT_KIND_VMM_MAP, other.ns = CMT_NS_VMM_MAP;
    CHECK(cmt_live_set_put(&s, &other, NULL) == 0);
    /* device memory of no device (-1) has no span either */
    other.addr = 0x2300, other.kind = CMT_KIND_DEVICE, other.ns = CMT_NS_POINTER, other.device = -1;
    CHECK(cmt_live_set_put(&s, &other, NULL) == 0);
    struct cmt_live pool = l;
    pool.addr = 0x4000, pool.kind = CMT_KIND_ASYNC;
    CHECK(cmt_live_set_put(&s, &pool, NULL) == 0);
    struct cmt_interval *buf = NULL, *v = NULL;
    size_t cap = 0;
    long n = cmt_intervals_of_device(&s, 0, &buf, &cap, &v);
    CHECK_EQ_U64(n, 4);
    CHECK(v >= buf && v + n <= buf + cap);
    CHECK_EQ_U64(v[0].addr, 0x1000);
    CHECK_EQ_U64(v[1].addr, 0x3000);
    CHECK_EQ_U64(v[2].addr, 0x4000);
    CHECK_EQ_U64(v[3].addr, 0x5000);
    CHECK_EQ_U64(v[3].end, 0x5800);
    CHECK_EQ_U64(v[1].region, CMT_REGION_PLAIN);
    CHECK_EQ_U64(v[2].region, CMT_REGION_POOL);
    /* device 1 has one allocation; the host (-1) none that counts */
    n = cmt_intervals_of_device(&s, 1, &buf, &cap, &v);
    CHECK_EQ_U64(n, 1);
    CHECK_EQ_U64(v[0].addr, 0x2000);
    CHECK_EQ_U64(cmt_intervals_of_device(&s, -1, &buf, &cap, &v), 0);
    free(buf);
    cmt_live_set_free(&s);
}

static uint64_t sort_rng = 88172645463325252ull;

static uint64_t sort_rand(void)
{
    sort_rng ^= sort_rng << 13;
    sort_rng ^= sort_rng >> 7;
    sort_rng ^= sort_rng << 17;
    return sort_rng;
}

static int interval_addr_ts_cmp(const void *pa, const void *pb)
{
    const struct cmt_interval *a = pa, *b = pb;
    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    return a->ts < b->ts ? -1 : a->ts > b->ts;
}

static void test_sort_by_addr(void)
{
    /* Addresses differing in every byte, in one byte only (one pass: the
     * result is in tmp), in two (back in v), repeated ones (stable: input
     * order kept, ts says which came first), and lengths 0 to 5000. */
    const uint64_t masks[] = {~0ull, 0xff00ull, 0xff0000000000ull | 0xfe00ull, 0x3ull << 20, 0};
    const size_t lengths[] = {0, 1, 2, 3, 17, 256, 5000};
    enum { MAX = 5000 };
    static struct cmt_interval v[MAX], tmp[MAX], want[MAX];
    for (size_t m = 0; m < sizeof masks / sizeof *masks; m++) {
        for (size_t k = 0; k < sizeof lengths / sizeof *lengths; k++) {
            size_t n = lengths[k];
            for (size_t i = 0; i < n; i++) {
                uint64_t a = 0x7e0000000000ull | (sort_rand() & masks[m]);
                v[i] = (struct cmt_interval){.addr = a, .end = a + 1, .ts = i, .stack = (uint32_t)(sort_rand() >> 40)};
                want[i] = v[i];
            }
            qsort(want, n, sizeof *want, interval_addr_ts_cmp);
            struct cmt_interval *got = cmt_intervals_sort_by_addr(v, tmp, n);
            CHECK(got == v || got == tmp);
            for (size_t i = 0; i < n; i++) {
                CHECK_EQ_U64(got[i].addr, want[i].addr);
                CHECK_EQ_U64(got[i].ts, want[i].ts);
                CHECK_EQ_U64(got[i].stack, want[i].stack);
            }
        }
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_addr_index_order(void)
{
    /* 2000 intervals in a scrambled order (block splits, directory growth),
     * every third removed again (blocks emptied and dropped). */
    enum { N = 2000 };
    static uint64_t addrs[N], kept[N];
    struct cmt_addr_index x;
    cmt_addr_index_init(&x);
    for (uint64_t i = 0; i < N; i++)
        addrs[i] = ((i * 7919) % N) * 4096;
    for (size_t i = 0; i < N; i++) {
        struct cmt_interval v = iv(addrs[i], addrs[i] + 1024, (uint32_t)i);
        CHECK(cmt_addr_index_insert(&x, &v) == 0);
    }
    CHECK_EQ_U64(x.count, N);
    size_t k = 0;
    for (size_t i = 0; i < N; i++) {
        struct cmt_addr_removal rm;
        if (i % 3 == 0) {
            cmt_addr_index_remove(&x, addrs[i], 1, 1, &rm);
            CHECK(rm.found);
            CHECK_EQ_U64(rm.removed.addr, addrs[i]);
        } else {
            kept[k++] = addrs[i];
        }
    }
    struct cmt_addr_removal missing;
    cmt_addr_index_remove(&x, 3, 1, 1, &missing);
    CHECK(!missing.found);
    qsort(kept, k, sizeof *kept, u64_cmp);
    struct cmt_interval *buf = NULL;
    size_t cap = 0;
    long n = cmt_addr_index_copy(&x, &buf, &cap);
    CHECK_EQ_U64(n, k);
    CHECK_EQ_U64(x.count, k);
    for (size_t i = 0; i < k; i++)
        CHECK_EQ_U64(buf[i].addr, kept[i]);
    free(buf);
    cmt_addr_index_free(&x);
}

static void test_addr_index_openers(void)
{
    struct cmt_addr_index x;
    cmt_addr_index_init(&x);
    struct cmt_interval a = iv(0, 100, 1), b = iv(1000, 1100, 2), c = iv(2000, 2100, 3);
    CHECK(cmt_addr_index_insert(&x, &a) == 0);
    CHECK(cmt_addr_index_insert(&x, &b) == 0);
    CHECK(cmt_addr_index_insert(&x, &c) == 0);
    /* Releasing b opens the hole [100, 2000) between a and c. */
    struct cmt_addr_removal rm;
    cmt_addr_index_remove(&x, 1000, 2, 50, &rm);
    CHECK(rm.found && rm.interior);
    CHECK_EQ_U64(rm.hole_size, 1900);
    /* d lands in that hole: both parts keep their opener. */
    struct cmt_interval d = iv(500, 600, 4);
    CHECK(cmt_addr_index_insert(&x, &d) == 0);
    struct cmt_interval *buf = NULL;
    size_t cap = 0;
    CHECK_EQ_U64(cmt_addr_index_copy(&x, &buf, &cap), 3);
    CHECK_EQ_U64(buf[0].addr, 0);
    CHECK_EQ_U64(buf[0].opener, 2);
    CHECK_EQ_U64(buf[0].opened_ts, 50);
    CHECK_EQ_U64(buf[1].addr, 500);
    CHECK_EQ_U64(buf[1].opener, 2);
    CHECK_EQ_U64(buf[2].opener, 0);
    /* An allocation past the span has no hole beside it to inherit. */
    struct cmt_interval e = iv(9000, 9100, 5);
    CHECK(cmt_addr_index_insert(&x, &e) == 0);
    CHECK_EQ_U64(cmt_addr_index_copy(&x, &buf, &cap), 4);
    CHECK_EQ_U64(buf[3].opener, 0);
    /* Releasing the first one only shrinks the span. */
    cmt_addr_index_remove(&x, 0, 1, 60, &rm);
    CHECK(rm.found && !rm.interior);
    /* The same address again replaces it (its release went unrecorded). */
    struct cmt_interval d2 = iv(500, 700, 6);
    CHECK(cmt_addr_index_insert(&x, &d2) == 0);
    CHECK_EQ_U64(x.count, 3);
    CHECK_EQ_U64(cmt_addr_index_copy(&x, &buf, &cap), 3);
    CHECK_EQ_U64(buf[0].end, 700);
    CHECK_EQ_U64(buf[0].stack, 6);
    CHECK_EQ_U64(buf[0].opener, 2);
    free(buf);
    cmt_addr_index_free(&x);
}

static void test_size_set(void)
{
    struct cmt_size_set s = {0};
    CHECK(cmt_size_set_add(&s, 0) == 0); /* size 0 is a size too */
    CHECK(cmt_size_set_add(&s, 4096) == 0);
    CHECK(cmt_size_set_add(&s, 4096) == 0);
    CHECK_EQ_U64(s.count, 2);
    CHECK(cmt_size_set_contains(&s, 0));
    CHECK(!cmt_size_set_contains(&s, 1));
    for (uint64_t i = 1; i <= 5000; i++)
        CHECK(cmt_size_set_add(&s, i * 512) == 0);
    CHECK_EQ_U64(s.count, CMT_CHURN_MAX_SIZES);
    CHECK(s.saturated);
    struct cmt_size_set t = {0};
    CHECK(cmt_size_set_add(&t, 7) == 0);
    struct cmt_size_set u = {0};
    CHECK(cmt_size_set_add(&u, 7) == 0);
    CHECK(cmt_size_set_add(&u, 8) == 0);
    CHECK(cmt_size_set_merge(&t, &u) == 0);
    CHECK_EQ_U64(t.count, 2);
    CHECK(!t.saturated);
    CHECK(cmt_size_set_merge(&t, &s) == 0);
    CHECK(t.saturated);
    cmt_size_set_free(&s);
    cmt_size_set_free(&t);
    cmt_size_set_free(&u);
}

static void test_size_set_pooled(void)
{
    /* 2000 sets from one pool (tables of 8 slots, then 128: more than one
     * 64 KiB block), set i seeing i % 100 + 1 sizes twice each: exact
     * counts up to 64, saturation past it, every size found again. */
    enum { SETS = 2000 };
    static struct cmt_size_set sets[SETS];
    struct cmt_slot_pool pool = {0};
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < SETS; i++)
            for (uint64_t k = 0; k <= i % 100; k++)
                CHECK(cmt_size_set_add_pooled(&sets[i], (i * 1000 + k) * 512, &pool) == 0);
    CHECK(pool.n_blocks > 1);
    for (size_t i = 0; i < SETS; i++) {
        uint64_t sizes = i % 100 + 1;
        CHECK_EQ_U64(sets[i].count, sizes < CMT_CHURN_MAX_SIZES ? sizes : CMT_CHURN_MAX_SIZES);
        CHECK(sets[i].saturated == (sizes > CMT_CHURN_MAX_SIZES));
        CHECK(sets[i].pooled == (sizes > 0));
        for (uint64_t k = 0; k < sizes && k < CMT_CHURN_MAX_SIZES; k++)
            CHECK(cmt_size_set_contains(&sets[i], (i * 1000 + k) * 512));
        CHECK(!cmt_size_set_contains(&sets[i], (i * 1000 + 999) * 512));
    }
    /* a merge into a set of its own (not pooled) */
    struct cmt_size_set merged = {0};
    CHECK(cmt_size_set_merge(&merged, &sets[10]) == 0);
    CHECK(cmt_size_set_merge(&merged, &sets[20]) == 0);
    CHECK_EQ_U64(merged.count, 11 + 21);
    CHECK(!merged.pooled);
    cmt_size_set_free(&merged);
    for (size_t i = 0; i < SETS; i++)
        cmt_size_set_free(&sets[i]);
    cmt_slot_pool_free(&pool);
}

static void test_churn_ranking(void)
{
    struct cmt_churn c;
    cmt_churn_init(&c);
    /* Site 3: 10 sizes, each twice, all released; site 9: one size 100 times. */
    for (int rep = 0; rep < 2; rep++)
        for (uint64_t s = 1; s <= 10; s++) {
            CHECK(cmt_churn_alloc(&c, 3, s * MiB) == 0);
            cmt_churn_release(&c, 3, 1000);
        }
    for (int i = 0; i < 100; i++)
        CHECK(cmt_churn_alloc(&c, 9, MiB) == 0);
    CHECK_EQ_U64(c.sites[3].allocs, 20);
    CHECK_EQ_U64(c.sites[3].frees, 20);
    CHECK_EQ_U64(c.sites[3].sizes.count, 10);
    CHECK_EQ_U64(cmt_churn_site_distinct(&c.sites[3]), 10);
    CHECK_EQ_U64(c.sites[3].min_size, MiB);
    CHECK_EQ_U64(c.sites[3].max_size, 10 * MiB);
    CHECK_EQ_U64(c.sites[3].lifetime_ns, 20000);
    CHECK_EQ_U64(cmt_churn_site_distinct(&c.sites[9]), 1);
    CHECK_EQ_U64(c.sites[9].sizes.count, 0); /* one size: no set */
    CHECK_EQ_U64(c.sites[9].alloc_bytes, 100 * MiB);
    /* A first size of 0 is a size and the smallest; a size near the
     * largest there is; repeats count as allocations, not sizes. */
    const uint64_t huge = UINT64_MAX - 511, sizes[] = {0, 0, huge, huge, 512, 0};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        CHECK(cmt_churn_alloc(&c, 40, sizes[i]) == 0);
    CHECK_EQ_U64(c.sites[40].allocs, 6);
    CHECK_EQ_U64(c.sites[40].sizes.count, 3);
    CHECK_EQ_U64(c.sites[40].min_size, 0);
    CHECK_EQ_U64(c.sites[40].max_size, huge);
    CHECK(cmt_churn_alloc(&c, 41, UINT64_MAX) == 0);
    CHECK_EQ_U64(c.sites[41].min_size, UINT64_MAX);
    CHECK_EQ_U64(c.sites[41].max_size, UINT64_MAX);
    CHECK_EQ_U64(cmt_churn_site_distinct(&c.sites[41]), 1);
    CHECK(cmt_churn_alloc(&c, 42, 4096) == 0);
    CHECK(cmt_churn_alloc(&c, 42, 4096) == 0);
    CHECK_EQ_U64(c.sites[42].min_size, 4096);
    CHECK_EQ_U64(cmt_churn_site_distinct(&c.sites[42]), 1);
    CHECK_EQ_U64(c.sites[42].sizes.count, 0);
    cmt_churn_free(&c);

    struct cmt_churn_row rows[] = {
        {.key = 1, .distinct = 3, .allocs = 900},
        {.key = 2, .distinct = 10, .allocs = 50},
        {.key = 3, .distinct = 50, .allocs = 60},
        {.key = 4, .distinct = 10, .allocs = 80},
        {.key = 5, .distinct = 10, .allocs = 80},
        {.key = 6, .distinct = 4, .allocs = 4},
    };
    struct cmt_churn_row *out;
    long n = cmt_churn_rank(rows, 6, 4, &out);
    CHECK_EQ_U64(n, 5);
    /* Most sizes first; then more allocations; then the key. Site 1 (3 sizes) is out. */
    uint64_t order[] = {3, 4, 5, 2, 6};
    for (long i = 0; i < n; i++)
        CHECK_EQ_U64(out[i].key, order[i]);
    free(out);
}

static void test_series(void)
{
    struct {
        struct cmt_series s;
        int v[4];
    } t = {.s = {.cap = 4}};
    for (int i = 0; i < 10; i++) {
        int *slot = cmt_series_next(&t.s, t.v, sizeof t.v[0]);
        if (slot)
            *slot = i;
    }
    /* 0 1 2 3 | full: keep 0 2, stride 2: 4 6 | full: keep 0 4, stride 4: 8 */
    CHECK_EQ_U64(t.s.n, 3);
    CHECK_EQ_U64(t.s.stride, 4);
    CHECK_EQ_U64(t.v[0], 0);
    CHECK_EQ_U64(t.v[1], 4);
    CHECK_EQ_U64(t.v[2], 8);
    struct {
        struct cmt_series s;
        int v[4];
    } p = {.s = {.cap = 4}};
    bool halved = false, ever = false;
    for (int i = 0; i < 6; i++) {
        int *slot = cmt_series_push(&p.s, p.v, sizeof p.v[0], &halved);
        *slot = i;
        ever |= halved;
    }
    CHECK(ever);
    CHECK_EQ_U64(p.s.n, 4); /* 0 1 2 3 -> 0 2, then 4 5 */
    CHECK_EQ_U64(p.v[0], 0);
    CHECK_EQ_U64(p.v[1], 2);
    CHECK_EQ_U64(p.v[2], 4);
    CHECK_EQ_U64(p.v[3], 5);
}

/* A 16 GiB device, nothing else on it, a 1 GiB allowance: each case below
 * changes what its rule needs and checks the rule and its boundary. */
static struct cmt_oom_figures base(void)
{
    return (struct cmt_oom_figures){
        .result = CMT_CUDA_OUT_OF_MEMORY,
        .request = 4 * GiB,
        .live = 8 * GiB,
        .allowance = GiB,
        .has_sample = true,
        .free = 8 * GiB,
        .total = 16 * GiB,
    };
}

static void expect(const struct cmt_oom_figures *f, enum cmt_verdict v, enum cmt_verdict_rule rule)
{
    struct cmt_verdict_result r;
    cmt_oom_decide(f, &r);
    if (r.verdict != v || r.rule != rule) {
        fprintf(stderr, "expected %s %s, got %s %s\n", cmt_verdict_name(v), cmt_verdict_rule_id(rule),
                cmt_verdict_name(r.verdict), cmt_verdict_rule_id(r.rule));
        exit(1);
    }
}

static void test_verdicts(void)
{
    struct cmt_oom_figures f = base();
    struct cmt_verdict_result r;

    /* R0: an invalid value is not a shortage, whatever the figures. */
    f.result = 1;
    expect(&f, CMT_VERDICT_NOT_OOM, CMT_VRULE_NOT_OOM);

    /* R1: released and retried the same size; not without a release. */
    f = base();
    f.retried = true;
    f.released_after = 512;
    f.free = 0;
    expect(&f, CMT_VERDICT_CACHING, CMT_VRULE_RETRIED_AFTER_RELEASE);
    f.released_after = 0; /* used 16, live 8: 7 GiB of others beyond the allowance cover the 4 GiB short */
    expect(&f, CMT_VERDICT_OTHER_CONSUMERS, CMT_VRULE_OTHERS_COVER);

    /* R2, R3: no sample; the span decides or nothing does. */
    f = base();
    f.has_sample = false;
    f.span_free = 4 * GiB;
    f.largest_hole = 4 * GiB - 1;
    expect(&f, CMT_VERDICT_FRAGMENTATION, CMT_VRULE_NO_SAMPLE_SPAN);
    f.largest_hole = 4 * GiB;
    expect(&f, CMT_VERDICT_UNKNOWN, CMT_VRULE_NO_SAMPLE);
    f.largest_hole = 0;
    f.span_free = 4 * GiB - 1;
    expect(&f, CMT_VERDICT_UNKNOWN, CMT_VRULE_NO_SAMPLE);

    /* R4: larger than the device, with the context's share (here 1 GiB in
     * use and unexplained, all of it the allowance). */
    f = base();
    f.live = 0;
    f.free = 15 * GiB;
    f.request = 15 * GiB + 1;
    expect(&f, CMT_VERDICT_CAPACITY, CMT_VRULE_LARGER_THAN_DEVICE);
    cmt_oom_decide(&f, &r);
    CHECK_EQ_U64(r.allowance, GiB);
    CHECK_EQ_U64(r.others, 0);
    /* the device holds 16 GiB less the context's 1 GiB: 1 B too many, and
     * no allocator setting changes that */
    CHECK_EQ_U64(r.excess, 1);
    CHECK(r.no_setting_fits);
    f.request = 15 * GiB; /* fits exactly: the free bytes would do, so no shortfall */
    expect(&f, CMT_VERDICT_FRAGMENTATION, CMT_VRULE_ENOUGH_FREE);
    cmt_oom_decide(&f, &r);
    CHECK_EQ_U64(r.excess, 0);
    CHECK(!r.no_setting_fits);

    /* R5: live + request + allowance > total. The allowance is capped by what
     * is unexplained: with nothing unexplained it is 0. */
    f = base();
    f.request = 8 * GiB + 1;
    expect(&f, CMT_VERDICT_CAPACITY, CMT_VRULE_LIVE_PLUS_REQUEST);
    cmt_oom_decide(&f, &r);
    /* the live data and the request exceed the device by 1 B; a caching
     * allocator's settings may still free some of the live data */
    CHECK_EQ_U64(r.excess, 1);
    CHECK(!r.no_setting_fits);
    CHECK_EQ_U64(r.allowance, 0);
    CHECK_EQ_U64(r.shortfall, 1);

    /* R6: other pools' unused bytes cover the shortfall exactly. */
    f = base();
    f.live = 2 * GiB;
    f.free = 4 * GiB;            /* used 12: live 2 + pool 10 reserved, unused */
    f.pool_slack = 10 * GiB;
    f.pool_slack_other = 2 * GiB; /* the requesting pool holds the other 8 */
    f.request = 6 * GiB;          /* shortfall 2 GiB */
    expect(&f, CMT_VERDICT_CACHING, CMT_VRULE_POOLS_COVER);
    f.pool_slack_other = 2 * GiB - 1; /* one byte short; the requesting pool's own unused bytes cover it */
    expect(&f, CMT_VERDICT_FRAGMENTATION, CMT_VRULE_OWN_POOL);

    /* R7: others = used - live - pools' unused - allowance cover it. */
    f = base();
    f.live = 2 * GiB;
    f.free = 4 * GiB;   /* used 12, 10 unexplained, 9 beyond the allowance */
    f.request = 6 * GiB;
    expect(&f, CMT_VERDICT_OTHER_CONSUMERS, CMT_VRULE_OTHERS_COVER);
    cmt_oom_decide(&f, &r);
    CHECK_EQ_U64(r.unexplained, 10 * GiB);
    CHECK_EQ_U64(r.others, 9 * GiB);
    CHECK_EQ_U64(r.shortfall, 2 * GiB);
    f.request = 14 * GiB; /* 2 + 14 + 1 > 16: capacity comes first */
    expect(&f, CMT_VERDICT_CAPACITY, CMT_VRULE_LIVE_PLUS_REQUEST);

    /* R9: neither alone covers it; the larger share names the verdict. */
    f = base();
    f.live = 2 * GiB;
    f.free = 2 * GiB;            /* used 14: live 2, pool unused 5, unexplained 7 (6 beyond the allowance) */
    f.pool_slack = 5 * GiB;
    f.pool_slack_other = 5 * GiB;
    f.request = 9 * GiB;         /* shortfall 7; 2 + 9 + 1 <= 16 */
    expect(&f, CMT_VERDICT_OTHER_CONSUMERS, CMT_VRULE_POOLS_AND_OTHERS);
    f.pool_slack = 6 * GiB + 1;   /* used 14: unexplained 6 GiB - 1, others 5 GiB - 1 */
    f.pool_slack_other = 6 * GiB + 1;
    expect(&f, CMT_VERDICT_CACHING, CMT_VRULE_POOLS_AND_OTHERS);

    /* R10: the free bytes were there. */
    f = base();
    f.request = 8 * GiB;
    f.live = 7 * GiB;
    expect(&f, CMT_VERDICT_FRAGMENTATION, CMT_VRULE_ENOUGH_FREE);

    CHECK_STR(cmt_verdict_name(CMT_VERDICT_OTHER_CONSUMERS), "other-consumers");
    CHECK_STR(cmt_verdict_rule_id(CMT_VRULE_ENOUGH_FREE), "R10");
}

/* R11, R12: the cache's own record decides, except for other consumers. */
static void test_verdicts_in_cache(void)
{
    struct cmt_oom_figures f = base(); /* 16 GiB device, 8 free, 8 live */
    struct cmt_verdict_result r;
    f.request = 8 * GiB + 1;           /* R5 by the device's figures */
    /* 7 GiB free in the cache's segments and 1 GiB on the device: enough in
     * bytes, so fragmentation inside the cache, whatever R5 says */
    struct cmt_cache_oom_figures c = {.request = 8 * GiB, .cache_free = 7 * GiB, .device_free = GiB};
    cmt_oom_decide_in_cache(&f, &c, &r);
    CHECK_EQ_U64(r.verdict, CMT_VERDICT_FRAGMENTATION);
    CHECK_EQ_U64(r.rule, CMT_VRULE_CACHE_FRAGMENTED);
    CHECK_EQ_U64(r.excess, 0);
    CHECK_EQ_U64(r.shortfall, 1); /* the device's figures are kept for the words */
    c.device_free = GiB - 1; /* one byte short: the tensors fill it */
    cmt_oom_decide_in_cache(&f, &c, &r);
    CHECK_EQ_U64(r.verdict, CMT_VERDICT_CAPACITY);
    CHECK_EQ_U64(r.rule, CMT_VRULE_CACHE_FULL);
    CHECK_EQ_U64(r.excess, 1);
    CHECK(!r.no_setting_fits);
    /* other consumers by the device's figures: the cache cannot see them */
    f = base();
    f.live = 2 * GiB;
    f.free = 4 * GiB;
    f.request = 6 * GiB; /* R7 */
    c = (struct cmt_cache_oom_figures){.request = 6 * GiB, .cache_free = 0, .device_free = 4 * GiB};
    cmt_oom_decide_in_cache(&f, &c, &r);
    CHECK_EQ_U64(r.verdict, CMT_VERDICT_OTHER_CONSUMERS);
    CHECK_EQ_U64(r.rule, CMT_VRULE_OTHERS_COVER);
    CHECK_STR(cmt_verdict_rule_id(CMT_VRULE_CACHE_FRAGMENTED), "R11");
    CHECK_STR(cmt_verdict_rule_id(CMT_VRULE_CACHE_FULL), "R12");
}

static uint64_t ev_ts = 1000;

static void ev(struct cmt_replay *r, uint8_t type, uint8_t api, uint64_t addr, uint64_t size, uint32_t stack)
{
    struct cmt_event_in e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .device = 0,
        .ts = ev_ts++,
        .addr = addr,
        .size = size,
        .stack = stack,
        .aux = {type == CMT_REC_IPC ? 0xabcull : 0},
    };
    CHECK(cmt_replay_event(r, &e) == 0);
}

/* A gap of the importer's own blocks holding an open mapping of another
 * process's memory (cudaIpcOpenMemHandle) is none of its free memory: no
 * hole, not in the span's free bytes, even when the mapping is one
 * allocation step at the gap's lower edge; the same gap once the mapping is
 * closed is a hole again; a mapping past the span changes nothing; a
 * release next to a mapping opens no hole. Both ways of keeping the span. */
static void test_hole_ipc_mapping(void)
{
    for (int track = 0; track < 2; track++) {
        ev_ts = 1000;
        struct cmt_replay r;
        CHECK(cmt_replay_init(&r) == 0);
        cmt_replay_set_origin(&r, 1000);
        struct cmt_forensics_options opt = {.track_holes = track != 0};
        struct cmt_forensics *f = cmt_forensics_new(&opt);
        CHECK(f != NULL);
        CHECK(cmt_forensics_attach(f, &r) == 0);
        ev(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x100000, MiB, 1);
        ev(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x400000, MiB, 2);
        ev(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x700000, MiB, 3);
        struct cmt_frag_point p;
        CHECK(cmt_frag_checkpoint(f, &r, 0, ev_ts, &p) == 0);
        CHECK_EQ_U64(p.holes.count, 2);
        CHECK_EQ_U64(p.holes.total, 4 * MiB);
        ev(&r, CMT_REC_IPC, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0x200000, 512, 4); /* at gap 1's lower edge */
        ev(&r, CMT_REC_IPC, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0x800000, MiB, 5);  /* just past the span */
        CHECK(cmt_frag_checkpoint(f, &r, 0, ev_ts, &p) == 0);
        CHECK_EQ_U64(p.holes.count, 1);
        CHECK_EQ_U64(p.holes.total, 2 * MiB);
        CHECK_EQ_U64(p.holes.largest, 2 * MiB);
        CHECK_EQ_U64(p.holes.address_space, 2 * MiB);
        CHECK_EQ_U64(p.holes.lo, 0x100000);
        CHECK_EQ_U64(p.holes.hi, 0x800000);
        ev(&r, CMT_REC_IPC, CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, 0x200000, 0, 4);
        CHECK(cmt_frag_checkpoint(f, &r, 0, ev_ts, &p) == 0);
        CHECK_EQ_U64(p.holes.count, 2);
        CHECK_EQ_U64(p.holes.total, 4 * MiB);
        CHECK_EQ_U64(p.holes.address_space, 0);
        /* mapped again in gap 2, at its upper edge, then the block below it freed */
        ev(&r, CMT_REC_IPC, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0x6ffe00, 512, 6);
        ev(&r, CMT_REC_FREE, CMT_API_CUDA_FREE, 0x400000, 0, 0);
        CHECK(cmt_frag_checkpoint(f, &r, 0, ev_ts, &p) == 0);
        CHECK_EQ_U64(p.holes.count, 0);
        CHECK_EQ_U64(p.holes.total, 0);
        CHECK_EQ_U64(p.holes.address_space, 5 * MiB);
        if (track)
            for (size_t i = 0; i < f->openers_cap; i++)
                CHECK_EQ_U64(f->openers[i].count, 0);
        cmt_forensics_free(f);
        cmt_replay_free(&r);
    }
}

int main(void)
{
    test_hole_scan();
    test_hole_address_space();
    test_hole_regions();
    test_intervals_of_device();
    test_sort_by_addr();
    test_addr_index_order();
    test_addr_index_openers();
    test_size_set();
    test_size_set_pooled();
    test_churn_ranking();
    test_series();
    test_verdicts();
    test_verdicts_in_cache();
    test_hole_ipc_mapping();
    printf("forensics: all checks passed\n");
    return 0;
}
