/* SPDX-License-Identifier: MIT */
/* The usage analyses through a real replay: allocation calls and the
 * short-lived rule of site_calls.h (released before its call site allocated
 * again on the same thread, judged at that next allocation; stream-ordered
 * allocations not counted), and device memory by the allocating thread
 * (thread_use.h). Each followed as an observer of its own, then all with the
 * holders' own peaks through one observer (alloc_views.h), which also calls
 * another observer's on_change once per change: the same figures. */
#include <stdint.h>

#include "alloc_views.h"
#include "replay.h"
#include "site_calls.h"
#include "test_util.h"
#include "thread_use.h"

#define MiB (1024ull * 1024ull)

static struct cmt_replay r;
static struct cmt_holder_pass *holders; /* fused: the reading side's half, given each event first */

static void event(uint8_t type, uint8_t api, uint32_t tid, uint64_t ts, uint64_t addr, uint64_t size, uint64_t stack)
{
    struct cmt_event_in e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .device = type == CMT_REC_ALLOC ? 0 : -1,
        .tid = tid,
        .ts = ts,
        .addr = addr,
        .size = size,
        .stack = stack,
    };
    if (holders)
        cmt_holder_pass_read(holders, &e);
    CHECK(cmt_replay_event(&r, &e) == 0);
}

/* Stack 3 is cuBLAS's, the rest the program's. */
static enum cmt_holder holder_of(void *ctx, uint64_t stack)
{
    (void)ctx;
    return stack == 3 ? CMT_HOLDER_CUBLAS : CMT_HOLDER_OTHER;
}

static uint64_t then_calls, then_live;

static int then_change(void *ctx, const struct cmt_replay *rp, const struct cmt_live *l, bool live)
{
    (void)ctx;
    (void)rp;
    then_calls++;
    then_live = live ? then_live + l->size : then_live - l->size;
    return 0;
}

#define ALLOC(tid, ts, addr, size, stack) event(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, tid, ts, addr, size, stack)
#define FREE(tid, ts, addr) event(CMT_REC_FREE, CMT_API_CUDA_FREE, tid, ts, addr, 0, 0)

static void run(bool fused)
{
    CHECK(cmt_replay_init(&r) == 0);
    cmt_replay_bound_stacks(&r, 1u << 20);
    cmt_replay_set_origin(&r, 1000);
    struct cmt_site_calls sc;
    struct cmt_thread_use tu;
    struct cmt_holder_pass hp;
    struct cmt_alloc_views views;
    const struct cmt_replay_observer then = {.on_change = then_change};
    then_calls = then_live = 0;
    CHECK(cmt_site_calls_init(&sc) == 0);
    CHECK(cmt_thread_use_init(&tu) == 0);
    if (fused) {
        CHECK(cmt_holder_pass_init(&hp, holder_of, NULL, r.stack_id_limit) == 0);
        holders = &hp;
        cmt_alloc_views_init(&views, &sc, &tu, &hp);
        CHECK(cmt_replay_add_observer(&r, &then) == 0);
        CHECK(cmt_replay_add_observer(&r, &views.observer) == 0);
        cmt_alloc_views_then(&views, &r, &then);
        CHECK_EQ_U64(r.n_change_hooks, 1);
    } else {
        holders = NULL;
        CHECK(cmt_replay_add_observer(&r, &sc.observer) == 0);
        CHECK(cmt_replay_add_observer(&r, &tu.observer) == 0);
    }

    /* stack 1, thread 7: three allocate-release pairs: the first two are
     * short-lived (their site asked again after their release), the last is
     * never judged (a buffer released at teardown is no short-lived one) */
    for (uint64_t i = 0; i < 3; i++) {
        ALLOC(7, 2000 + i * 100, 0x1000000, 1 * MiB, 1);
        FREE(7, 2010 + i * 100, 0x1000000);
    }
    /* stack 2, thread 7: allocate A, allocate B (A still live: not
     * short-lived), release A, release B (the last of the site: not judged) */
    ALLOC(7, 3000, 0x2000000, 2 * MiB, 2);
    ALLOC(7, 3100, 0x3000000, 2 * MiB, 2);
    FREE(7, 3200, 0x2000000);
    FREE(7, 3400, 0x3000000);
    /* stacks 4 and 5, thread 7: a loop of two buffers with the same
     * lifetimes (a = 4, b = 5, free b, free a), three rounds: each site 2 of
     * 3, whatever the order of the releases */
    for (uint64_t i = 0; i < 3; i++) {
        ALLOC(7, 3500 + i * 100, 0x6000000, 1 * MiB, 4);
        ALLOC(7, 3510 + i * 100, 0x7000000, 1 * MiB, 5);
        FREE(7, 3520 + i * 100, 0x7000000);
        FREE(7, 3530 + i * 100, 0x6000000);
    }
    /* stack 6, thread 7: stream-ordered, a pool serves it: never counted */
    for (uint64_t i = 0; i < 3; i++) {
        event(CMT_REC_ALLOC, CMT_API_CUDA_MALLOC_ASYNC, 7, 3850 + i * 10, 0x8000000, 1 * MiB, 6);
        event(CMT_REC_FREE, CMT_API_CUDA_FREE_ASYNC, 7, 3855 + i * 10, 0x8000000, 0, 0);
    }
    /* stack 3, thread 8 allocates, thread 7 releases: counts for thread 8
     * until then; its site asked again before the release: not short-lived */
    ALLOC(8, 4000, 0x4000000, 4 * MiB, 3);
    ALLOC(8, 4100, 0x5000000, 4 * MiB, 3);
    FREE(7, 4200, 0x4000000);
    /* thread 8's peak: 8 MiB in 2 at 4100; one 4 MiB allocation left */
    cmt_replay_finish(&r, 5000);

    struct cmt_site_calls_cell c1 = cmt_site_calls_get(&sc, 1), c2 = cmt_site_calls_get(&sc, 2),
                               c3 = cmt_site_calls_get(&sc, 3), c4 = cmt_site_calls_get(&sc, 4),
                               c5 = cmt_site_calls_get(&sc, 5), c6 = cmt_site_calls_get(&sc, 6);
    CHECK_EQ_U64(c1.calls, 3);
    CHECK_EQ_U64(c1.short_lived, 2);
    CHECK_EQ_U64(c1.short_bytes, 2 * MiB);
    CHECK_EQ_U64(c1.short_life_ns, 20);
    CHECK_EQ_U64(c2.calls, 2);
    CHECK_EQ_U64(c2.short_lived, 0);
    CHECK_EQ_U64(c3.calls, 2);
    CHECK_EQ_U64(c3.short_lived, 0);
    CHECK_EQ_U64(c4.short_lived, 2);
    CHECK_EQ_U64(c4.short_life_ns, 60);
    CHECK_EQ_U64(c5.short_lived, 2);
    CHECK_EQ_U64(c5.short_life_ns, 20);
    CHECK_EQ_U64(c6.calls, 3);
    CHECK_EQ_U64(c6.short_lived, 0);
    CHECK_EQ_U64(cmt_site_calls_get(&sc, 99).calls, 0);
    CHECK_EQ_U64(sc.calls, 16);
    CHECK_EQ_U64(sc.short_lived, 6);

    CHECK_EQ_U64(tu.n_rows, 2);
    const struct cmt_thread_use_row *t7 = &tu.rows[0], *t8 = &tu.rows[1];
    CHECK_EQ_U64(t7->tid, 7);
    CHECK_EQ_U64(t7->allocs, 14);
    CHECK_EQ_U64(t7->peak, 4 * MiB);
    CHECK_EQ_U64(t7->peak_count, 2);
    CHECK_EQ_U64(t7->peak_ts, 3100);
    CHECK_EQ_U64(t7->live, 0);
    CHECK_EQ_U64(t8->tid, 8);
    CHECK_EQ_U64(t8->peak, 8 * MiB);
    CHECK_EQ_U64(t8->peak_ts, 4100);
    CHECK_EQ_U64(t8->live, 4 * MiB);
    CHECK_EQ_U64(t8->live_count, 1);
    CHECK_EQ_U64(t8->frees_by_others, 1);

    if (fused) {
        /* cuBLAS's stack 3: 4 then 8 MiB at 4100, one 4 MiB left */
        CHECK(!hp.out_of_memory);
        CHECK_EQ_U64(hp.peak[0][CMT_HOLDER_CUBLAS].bytes, 8 * MiB);
        CHECK_EQ_U64(hp.peak[0][CMT_HOLDER_CUBLAS].count, 2);
        CHECK_EQ_U64(hp.peak[0][CMT_HOLDER_CUBLAS].ts, 4100);
        CHECK_EQ_U64(hp.live[0][CMT_HOLDER_CUBLAS], 4 * MiB);
        CHECK_EQ_U64(hp.peak[0][CMT_HOLDER_OTHER].bytes, 0); /* the program's: not followed */
        /* told every change once: 16 allocations, 15 releases; 4 MiB left */
        CHECK_EQ_U64(then_calls, 31);
        CHECK_EQ_U64(then_live, 4 * MiB);
        cmt_holder_pass_free(&hp);
        holders = NULL;
    }
    cmt_site_calls_free(&sc);
    cmt_thread_use_free(&tu);
    cmt_replay_free(&r);
}

int main(void)
{
    run(false);
    run(true);
    return 0;
}
