/* SPDX-License-Identifier: MIT */
/* The timeline keeps min, max and last per bucket and the exact peak while
 * its buckets merge as the run grows; memory stays at CMT_TIMELINE_BUCKETS
 * buckets whatever the length. */
#include "test_util.h"
#include "timeline.h"

#define MS 1000000ull
#define MiB (1ull << 20)

static void alloc(struct cmt_timeline *t, uint64_t ts, int32_t dev, unsigned kind, uint64_t bytes)
{
    cmt_timeline_event(t, ts, CMT_REC_ALLOC, false);
    cmt_timeline_change(t, dev, kind, bytes, true, ts);
}

static void release(struct cmt_timeline *t, uint64_t ts, int32_t dev, unsigned kind, uint64_t bytes)
{
    cmt_timeline_event(t, ts, CMT_REC_FREE, false);
    cmt_timeline_change(t, dev, kind, bytes, false, ts);
}

int main(void)
{
    struct cmt_timeline t;
    cmt_timeline_init(&t);
    const uint64_t origin = 1000 * MS;
    cmt_timeline_set_origin(&t, origin);
    /* A sawtooth on device 0 (1..10 MiB per 10 ms period, device kind),
     * a pool allocation that peaks once at 3 s, pinned host memory. Ten
     * seconds: the buckets must have merged many times. */
    alloc(&t, origin + 1, -1, CMT_KIND_HOST_PINNED, 5 * MiB);
    uint64_t ts = origin + 1 * MS;
    for (int period = 0; period < 1000; period++) {
        for (int k = 0; k < 10; k++)
            alloc(&t, ts + (uint64_t)k * 100000, 0, CMT_KIND_DEVICE, 1 * MiB);
        /* events in time order, as the replay delivers them */
        if (period == 300)
            alloc(&t, ts + 2 * MS, 0, CMT_KIND_ASYNC, 64 * MiB);
        if (period == 301)
            release(&t, ts + 2 * MS, 0, CMT_KIND_ASYNC, 64 * MiB);
        for (int k = 0; k < 10; k++)
            release(&t, ts + 5 * MS + (uint64_t)k * 100000, 0, CMT_KIND_DEVICE, 1 * MiB);
        ts += 10 * MS;
    }
    cmt_timeline_finish(&t, origin + 10 * 1000 * MS);
    CHECK(!t.out_of_memory);
    CHECK(cmt_timeline_used(&t) <= CMT_TIMELINE_BUCKETS);
    CHECK(cmt_timeline_used(&t) > CMT_TIMELINE_BUCKETS / 2);
    /* The buckets cover the run and are as small as the fixed count allows. */
    uint64_t width = cmt_timeline_width(&t);
    CHECK(width * cmt_timeline_used(&t) >= 10 * 1000 * MS);
    CHECK(width * CMT_TIMELINE_BUCKETS / 2 < 10 * 1000 * MS);
    CHECK_EQ_U64(t.n_series, 5); /* pinned-host and the host's total, device, total, async-pool */

    const struct cmt_timeline_series *dev = cmt_timeline_find(&t, 0, CMT_KIND_DEVICE);
    const struct cmt_timeline_series *total = cmt_timeline_find(&t, 0, CMT_TIMELINE_TOTAL);
    const struct cmt_timeline_series *pool = cmt_timeline_find(&t, 0, CMT_KIND_ASYNC);
    const struct cmt_timeline_series *host = cmt_timeline_find(&t, -1, CMT_KIND_HOST_PINNED);
    CHECK(dev && total && pool && host);
    CHECK(!cmt_timeline_find(&t, 0, CMT_KIND_MANAGED));
    CHECK_EQ_U64(dev->peak, 10 * MiB);
    CHECK_EQ_U64(dev->peak_ts, origin + 1 * MS + 9 * 100000); /* first time it reached 10 MiB */
    CHECK_EQ_U64(pool->peak, 64 * MiB);
    CHECK_EQ_U64(total->peak, 74 * MiB);
    /* the total peaks in period 300, when the pool buffer and the tenth
     * device MiB are live together */
    CHECK_EQ_U64(total->peak_ts, origin + 1 * MS + 300 * 10 * MS + 2 * MS);
    CHECK_EQ_U64(host->peak, 5 * MiB);
    CHECK_EQ_U64(host->live, 5 * MiB);
    CHECK_EQ_U64(dev->live, 0);

    /* Every bucket of the sawtooth spans whole periods: min 0, max 10 MiB;
     * the pinned series never moved after its start. */
    size_t used = cmt_timeline_used(&t);
    for (size_t b = 1; b + 1 < used; b++) {
        CHECK_EQ_U64(dev->cells[b].min, 0);
        CHECK_EQ_U64(dev->cells[b].max, 10 * MiB);
        CHECK_EQ_U64(host->cells[b].min, 5 * MiB);
        CHECK_EQ_U64(host->cells[b].max, 5 * MiB);
    }
    /* The pool series, born mid-run (its current cell set from the
     * timeline's bucket then, moved with it since): 64 MiB in the buckets
     * from its allocation to its release, nothing before or after. */
    uint64_t pool_from = (origin + 1 * MS + 300 * 10 * MS + 2 * MS - origin) / width;
    uint64_t pool_to = (origin + 1 * MS + 301 * 10 * MS + 2 * MS - origin) / width;
    for (size_t b = 0; b < used; b++)
        CHECK_EQ_U64(pool->cells[b].max, b >= pool_from && b <= pool_to ? 64 * MiB : 0);
    /* Events are all counted: 1 + 1000 x 20 + 2. */
    uint64_t events = 0;
    for (size_t b = 0; b < used; b++)
        events += t.counts[b].allocs + t.counts[b].frees;
    CHECK_EQ_U64(events, 1 + 1000 * 20 + 2);

    /* Resampling to 10 buckets keeps the extremes and the counts. */
    struct cmt_timeline_view v;
    CHECK(cmt_timeline_resample(&t, 10, &v) == 0);
    CHECK(v.n <= 10 && v.n >= 9);
    const struct cmt_timeline_series *host_total = cmt_timeline_find(&t, -1, CMT_TIMELINE_TOTAL);
    CHECK(host_total && host_total->peak == 5 * MiB);
    CHECK(v.series[0] == total && v.series[1] == dev && v.series[2] == pool && v.series[3] == host_total &&
          v.series[4] == host);
    uint64_t max_total = 0, vev = 0;
    for (size_t b = 0; b < v.n; b++) {
        if (v.cells[0 * v.n + b].max > max_total)
            max_total = v.cells[0 * v.n + b].max;
        vev += v.counts[b].allocs + v.counts[b].frees;
    }
    CHECK_EQ_U64(max_total, 74 * MiB);
    CHECK_EQ_U64(vev, events);
    CHECK_EQ_U64(cmt_timeline_view_bucket(&v, total->peak_ts), (total->peak_ts - origin) / v.width);
    cmt_timeline_view_free(&v);
    cmt_timeline_free(&t);

    /* A trace chooses its times: events from 0 to the end of 64-bit time.
     * The buckets widen to 2^54 ns (1024 of them reach 2^64); one bucket of
     * all of them is wider than 64 bits, so its width saturates (it wrapped
     * to 0 and cmt_timeline_view_bucket divided by it). */
    cmt_timeline_init(&t);
    cmt_timeline_set_origin(&t, 0);
    alloc(&t, 0, 0, CMT_KIND_DEVICE, 100);
    alloc(&t, UINT64_MAX - 1, 0, CMT_KIND_DEVICE, 200);
    CHECK_EQ_U64(cmt_timeline_width(&t), 1ull << 54);
    CHECK_EQ_U64(cmt_timeline_used(&t), 1024);
    CHECK(cmt_timeline_resample(&t, 1, &v) == 0);
    CHECK_EQ_U64(v.n, 1);
    CHECK_EQ_U64(v.width, UINT64_MAX);
    CHECK_EQ_U64(cmt_timeline_view_bucket(&v, UINT64_MAX - 1), 0);
    CHECK_EQ_U64(cmt_timeline_view_start(&v, 0), 0);
    CHECK_EQ_U64(cmt_timeline_view_start(&v, 1), UINT64_MAX);
    CHECK_EQ_U64(v.cells[0].max, 300);
    cmt_timeline_view_free(&v);
    CHECK(cmt_timeline_resample(&t, 3, &v) == 0);
    CHECK_EQ_U64(v.n, 3);
    CHECK_EQ_U64(v.width, 342ull << 54); /* ceil(1024 / 3) buckets each */
    CHECK_EQ_U64(cmt_timeline_view_bucket(&v, UINT64_MAX - 1), 2);
    CHECK_EQ_U64(cmt_timeline_view_start(&v, 2), 684ull << 54);
    CHECK_EQ_U64(cmt_timeline_view_start(&v, 3), UINT64_MAX); /* 1026 x 2^54 is past 2^64 */
    cmt_timeline_view_free(&v);
    cmt_timeline_free(&t);
    return 0;
}
