/* SPDX-License-Identifier: MIT */
/* The replay engine on its own (replay.h), events given by hand: accounts
 * and peaks per device and memory class, what it counts of odd events,
 * failures, and its observers: told in order, each of every change, told
 * the end, refused past the limit, and one that fails stops the replay. */
#include <stdint.h>
#include <string.h>

#include "replay.h"
#include "test_util.h"

static uint64_t now = 1000;

static int event(struct cmt_replay *r, uint8_t type, uint8_t api, int32_t device, uint64_t addr, uint64_t size,
                 uint64_t stack, int32_t result)
{
    struct cmt_event_in e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .device = device,
        .result = result,
        .ts = now++,
        .addr = addr,
        .size = size,
        .stack = stack,
    };
    return cmt_replay_event(r, &e);
}

static void alloc(struct cmt_replay *r, uint8_t api, int32_t device, uint64_t addr, uint64_t size, uint64_t stack)
{
    CHECK(event(r, CMT_REC_ALLOC, api, device, addr, size, stack, 0) == 0);
}

static void release(struct cmt_replay *r, uint8_t api, uint64_t addr)
{
    CHECK(event(r, CMT_REC_FREE, api, 0, addr, 0, 0, 0) == 0);
}

static void test_accounts_and_peaks(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    cmt_replay_set_origin(&r, 1000);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x1000, 100, 1);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x2000, 300, 2);
    uint64_t peak_ts = now - 1;
    release(&r, CMT_API_CUDA_FREE, 0x1000);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x3000, 50, 1);           /* 350 live: below the peak of 400 */
    alloc(&r, CMT_API_CUDA_MALLOC, 1, 0x1000, 7, 3);            /* another device: the same address apart */
    alloc(&r, CMT_API_CUDA_MALLOC_MANAGED, 0, 0x9000, 64, 4);   /* managed memory: its own class */
    alloc(&r, CMT_API_CUDA_MALLOC_HOST, -1, 0x7000, 4096, 5);   /* pinned host memory */
    release(&r, CMT_API_CUDA_FREE, 0xdead);                     /* never allocated */

    const struct cmt_account *d0 = cmt_replay_account(&r, 0, CMT_CLASS_DEVICE);
    CHECK(d0 && d0->seen);
    CHECK_EQ_U64(d0->live, 350);
    CHECK_EQ_U64(d0->live_count, 2);
    CHECK_EQ_U64(d0->peak, 400);
    CHECK_EQ_U64(d0->peak_count, 2);
    CHECK_EQ_U64(d0->peak_ts, peak_ts);
    const struct cmt_account *d1 = cmt_replay_account(&r, 1, CMT_CLASS_DEVICE);
    CHECK(d1 && d1->live == 7 && d1->peak == 7);
    const struct cmt_account *m0 = cmt_replay_account(&r, 0, CMT_CLASS_MANAGED);
    CHECK(m0 && m0->live == 64);
    const struct cmt_account *h = cmt_replay_account(&r, -1, CMT_CLASS_HOST);
    CHECK(h && h->live == 4096);
    CHECK(cmt_replay_account(&r, 2, CMT_CLASS_DEVICE) == NULL); /* device 2 had nothing */

    CHECK_EQ_U64(r.allocs, 6);
    CHECK_EQ_U64(r.frees, 1);
    CHECK_EQ_U64(r.unmatched_frees, 1);
    CHECK_EQ_U64(r.device_mask, 0x3);
    CHECK(r.host_seen);
    CHECK_EQ_U64(r.first_ts, 1000);
    CHECK_EQ_U64(r.last_ts, now - 1);

    /* A second allocation at a live address: a release was missed. */
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x2000, 10, 2);
    CHECK_EQ_U64(r.reused_addresses, 1);
    cmt_replay_free(&r);
}

/* ---- observers ------------------------------------------------------------------------ */

struct seen {
    int order[64];
    size_t n_order;
    uint64_t live_bytes; /* added minus removed, as the observer was told */
    uint64_t changes, failures, finish_end;
    int fail_change_after; /* >0: the nth change returns nonzero */
};

static int tag_a, tag_b;
static struct seen seen_a, seen_b;

static struct seen *seen_of(void *ctx)
{
    return ctx == &tag_a ? &seen_a : &seen_b;
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    (void)r;
    struct seen *s = seen_of(ctx);
    static int calls;
    if (s->n_order < 64)
        s->order[s->n_order++] = ++calls * (ctx == &tag_a ? 1 : -1); /* the global order, signed by who */
    s->changes++;
    s->live_bytes = live ? s->live_bytes + l->size : s->live_bytes - l->size;
    return s->fail_change_after && s->changes == (uint64_t)s->fail_change_after;
}

static int on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    (void)e;
    struct seen *s = seen_of(ctx);
    s->failures++;
    CHECK_EQ_U64(r->failed_allocs, s->failures - 1); /* told before the engine counts it */
    return 0;
}

static int on_finish(void *ctx, const struct cmt_replay *r, uint64_t end_ts)
{
    CHECK_EQ_U64(r->end_ts, end_ts);
    seen_of(ctx)->finish_end = end_ts;
    return 0;
}

static void test_observers(void)
{
    memset(&seen_a, 0, sizeof seen_a);
    memset(&seen_b, 0, sizeof seen_b);
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    const struct cmt_replay_observer a = {.ctx = &tag_a, .on_change = on_change, .on_failure = on_failure,
                                          .on_finish = on_finish};
    const struct cmt_replay_observer b = {.ctx = &tag_b, .on_change = on_change}; /* no failures, no end */
    CHECK(cmt_replay_add_observer(&r, &a) == 0);
    CHECK(cmt_replay_add_observer(&r, &b) == 0);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x1000, 100, 1);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x2000, 20, 1);
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0, 1ull << 40, 1, 2) == 0); /* out of memory */
    release(&r, CMT_API_CUDA_FREE, 0x1000);
    /* Each change told to a, then b, before the next change. */
    CHECK_EQ_U64(seen_a.n_order, 3);
    CHECK_EQ_U64(seen_b.n_order, 3);
    for (size_t i = 0; i < 3; i++) {
        CHECK_EQ_U64(seen_a.order[i], 2 * i + 1);
        CHECK_EQ_U64((uint64_t)-seen_b.order[i], 2 * i + 2);
    }
    CHECK_EQ_U64(seen_a.live_bytes, 20);
    CHECK_EQ_U64(seen_b.live_bytes, 20);
    CHECK_EQ_U64(seen_a.failures, 1);
    CHECK_EQ_U64(r.failed_allocs, 1);
    CHECK_EQ_U64(r.n_failures, 1);
    CHECK_EQ_U64(r.failures[0].size, 1ull << 40);
    CHECK_EQ_U64(r.failures[0].live_device_bytes, 120);
    cmt_replay_finish(&r, 5000);
    CHECK(cmt_replay_finish_observers(&r, 5000) == 0);
    CHECK_EQ_U64(seen_a.finish_end, 5000);
    CHECK_EQ_U64(seen_b.finish_end, 0);
    cmt_replay_free(&r);
}

static void test_observer_limit_and_failure(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    const struct cmt_replay_observer quiet = {0};
    for (int i = 0; i < CMT_REPLAY_MAX_OBSERVERS; i++)
        CHECK(cmt_replay_add_observer(&r, &quiet) == 0);
    CHECK(cmt_replay_add_observer(&r, &quiet) == -1);
    CHECK_EQ_U64(r.n_observers, CMT_REPLAY_MAX_OBSERVERS);
    cmt_replay_free(&r);

    /* An observer out of memory stops the replay at that event; the one
     * after it is not told. */
    memset(&seen_a, 0, sizeof seen_a);
    memset(&seen_b, 0, sizeof seen_b);
    seen_a.fail_change_after = 2;
    CHECK(cmt_replay_init(&r) == 0);
    const struct cmt_replay_observer a = {.ctx = &tag_a, .on_change = on_change};
    const struct cmt_replay_observer b = {.ctx = &tag_b, .on_change = on_change};
    CHECK(cmt_replay_add_observer(&r, &a) == 0);
    CHECK(cmt_replay_add_observer(&r, &b) == 0);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x1000, 100, 1);
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0x2000, 20, 1, 0) != 0);
    CHECK_EQ_U64(seen_a.changes, 2);
    CHECK_EQ_U64(seen_b.changes, 1);
    cmt_replay_free(&r);
}

/* An observer with changes_later is told no change until it wakes (from
 * one of its callbacks, here a failure), then every change in its place
 * among the observers: after a, before b. */
static struct cmt_replay *waking_replay;
static const struct cmt_replay_observer *waking;

static int wake_on_failure(void *ctx, const struct cmt_replay *r, const struct cmt_replay_in *e)
{
    (void)ctx;
    (void)r;
    (void)e;
    cmt_replay_wake_changes(waking_replay, waking);
    return 0;
}

static void test_observer_changes_later(void)
{
    static int tag_late;
    memset(&seen_a, 0, sizeof seen_a);
    memset(&seen_b, 0, sizeof seen_b);
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    const struct cmt_replay_observer a = {.ctx = &tag_a, .on_change = on_change};
    const struct cmt_replay_observer late = {
        .ctx = &tag_late, .on_change = on_change, .on_failure = wake_on_failure, .changes_later = true};
    const struct cmt_replay_observer b = {.ctx = &tag_b, .on_change = on_change};
    waking_replay = &r;
    waking = &late;
    CHECK(cmt_replay_add_observer(&r, &a) == 0);
    CHECK(cmt_replay_add_observer(&r, &late) == 0);
    CHECK(cmt_replay_add_observer(&r, &b) == 0);
    CHECK_EQ_U64(r.n_change_hooks, 2);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x1000, 100, 1);
    CHECK_EQ_U64(seen_a.changes, 1);
    CHECK_EQ_U64(seen_b.changes, 1);
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0, 1ull << 40, 1, 2) == 0); /* wakes late */
    CHECK_EQ_U64(r.n_change_hooks, 3);
    cmt_replay_wake_changes(&r, &late); /* awake already: nothing changes */
    CHECK_EQ_U64(r.n_change_hooks, 3);
    CHECK(r.change_hooks[0].ctx == &tag_a && r.change_hooks[1].ctx == &tag_late && r.change_hooks[2].ctx == &tag_b);
    release(&r, CMT_API_CUDA_FREE, 0x1000);
    CHECK_EQ_U64(seen_a.changes, 2);
    CHECK_EQ_U64(seen_b.changes, 3); /* tag_late counts as b's in seen_of: one change each */
    /* handed over (alloc_views.h calls it): the replay no longer does */
    cmt_replay_hand_over_changes(&r, &late);
    CHECK_EQ_U64(r.n_change_hooks, 2);
    CHECK(r.change_hooks[0].ctx == &tag_a && r.change_hooks[1].ctx == &tag_b);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x3000, 10, 1);
    CHECK_EQ_U64(seen_a.changes, 3);
    CHECK_EQ_U64(seen_b.changes, 4);
    cmt_replay_free(&r);
}

static void ipc(struct cmt_replay *r, uint8_t api, uint64_t addr, uint64_t size, uint64_t fp, int32_t result)
{
    struct cmt_event_in e = {
        .type = CMT_REC_IPC,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .device = 0,
        .result = result,
        .ts = now++,
        .addr = addr,
        .size = size,
        .stack = 3,
        .aux = {fp},
    };
    CHECK(cmt_replay_event(r, &e) == 0);
}

/* Memory mapped from another process is kept apart: never in an account,
 * its peak and what is still open at the end counted on their own; the
 * same handle opened twice is one mapping until closed twice; an imported
 * VMM handle's mapping is a mapping of another process's memory, and its
 * cuMemRelease no release of this process's memory (nor unmatched). */
static void test_ipc(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    cmt_replay_set_origin(&r, 1000);
    alloc(&r, CMT_API_CUDA_MALLOC, 0, 0x1000, 4096, 1);
    ipc(&r, CMT_API_CUDA_IPC_GET_MEM_HANDLE, 0x1000, 0, 0xaa, 0);
    ipc(&r, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0, 0, 0xbb, 201); /* failed: nothing mapped */
    ipc(&r, CMT_API_CUDA_IPC_OPEN_MEM_HANDLE, 0x9000, 1 << 20, 0xcc, 0);
    ipc(&r, CMT_API_CU_IPC_OPEN_MEM_HANDLE, 0x9000, 1 << 20, 0xcc, 0);
    ipc(&r, CMT_API_CU_IPC_OPEN_MEM_HANDLE, 0x200000, 3 << 20, 0xdd, 0);
    ipc(&r, CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, 0x9000, 0, 0, 0);
    CHECK_EQ_U64(r.ipc.live_bytes, 4 << 20); /* the first still open once */
    ipc(&r, CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, 0x9000, 0, 0, 0);
    ipc(&r, CMT_API_CUDA_IPC_CLOSE_MEM_HANDLE, 0x9000, 0, 0, 0); /* closed already */
    ipc(&r, CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, 0xc0de000000000005ull, 0, 0xee, 0);
    alloc(&r, CMT_API_CU_MEM_ADDRESS_RESERVE, 0, 0x7000000, 2 << 20, 4);
    struct cmt_event_in map = {
        .type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_MAP, .kind = CMT_KIND_VMM_MAP, .ts = now++,
        .addr = 0x7000000, .size = 2 << 20, .stack = 5, .aux = {0xc0de000000000005ull},
    };
    CHECK(cmt_replay_event(&r, &map) == 0);
    CHECK_EQ_U64(r.ipc.live_bytes, 5 << 20);
    CHECK_EQ_U64(r.ipc.peak_bytes, 5 << 20);
    release(&r, CMT_API_CU_MEM_RELEASE, 0xc0de000000000005ull);
    struct cmt_event_in unmap = {
        .type = CMT_REC_FREE, .api = CMT_API_CU_MEM_UNMAP, .kind = CMT_KIND_VMM_MAP, .ts = now++,
        .addr = 0x7000000, .size = 2 << 20,
    };
    CHECK(cmt_replay_event(&r, &unmap) == 0);
    cmt_replay_finish(&r, now);
    const struct cmt_account *a = cmt_replay_account(&r, 0, CMT_CLASS_DEVICE);
    CHECK(a != NULL);
    CHECK_EQ_U64(a->peak, 4096); /* only the process's own allocation */
    CHECK_EQ_U64(r.unmatched_frees, 0);
    CHECK_EQ_U64(r.ipc.n_exports, 1);
    CHECK(r.ipc.exports[0].alloc_found);
    CHECK_EQ_U64(r.ipc.exports[0].alloc_size, 4096);
    CHECK_EQ_U64(r.ipc.exports[0].alloc_stack, 1);
    CHECK_EQ_U64(r.ipc.n_imports, 3);
    CHECK(r.ipc.imports[0].closed && !r.ipc.imports[1].closed && r.ipc.imports[2].closed);
    CHECK_EQ_U64(r.ipc.imports[2].api, CMT_API_CU_MEM_MAP);
    CHECK_EQ_U64(r.ipc.imports[2].fingerprint, 0xee);
    CHECK_EQ_U64(r.ipc.imports[2].stack, 5);
    CHECK_EQ_U64(r.ipc.live_bytes, 3 << 20);
    CHECK_EQ_U64(r.ipc.live_count, 1);
    CHECK_EQ_U64(r.ipc.failed_opens, 1);
    CHECK_EQ_U64(r.ipc.unmatched_closes, 1);
    CHECK_EQ_U64(r.ipc.vmm_imported, 1);
    CHECK_EQ_U64(r.ipc.vmm_released, 1);
    cmt_replay_free(&r);
}

/* The same physical handle imported twice is counted twice, as the driver
 * counts it: the first cuMemRelease leaves it imported (a cuMemMap of it
 * after that still maps another process's memory), the second releases it,
 * and only a third is unmatched. */
static void test_ipc_handle_imported_twice(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    cmt_replay_set_origin(&r, 1000);
    const uint64_t h = 0xc0de000000000009ull;
    ipc(&r, CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, h, 0, 0xef, 0);
    ipc(&r, CMT_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE, h, 0, 0xef, 0);
    release(&r, CMT_API_CU_MEM_RELEASE, h);
    CHECK(cmt_ipc_is_imported_handle(&r.ipc, h));
    CHECK_EQ_U64(r.unmatched_frees, 0);
    alloc(&r, CMT_API_CU_MEM_ADDRESS_RESERVE, 0, 0x8000000, 2 << 20, 4);
    struct cmt_event_in map = {
        .type = CMT_REC_ALLOC, .api = CMT_API_CU_MEM_MAP, .kind = CMT_KIND_VMM_MAP, .ts = now++,
        .addr = 0x8000000, .size = 2 << 20, .stack = 5, .aux = {h},
    };
    CHECK(cmt_replay_event(&r, &map) == 0);
    CHECK_EQ_U64(r.ipc.n_imports, 1);
    CHECK_EQ_U64(r.ipc.live_bytes, 2 << 20);
    release(&r, CMT_API_CU_MEM_RELEASE, h);
    CHECK(!cmt_ipc_is_imported_handle(&r.ipc, h));
    CHECK_EQ_U64(r.unmatched_frees, 0);
    release(&r, CMT_API_CU_MEM_RELEASE, h); /* one release too many */
    CHECK_EQ_U64(r.unmatched_frees, 1);
    CHECK_EQ_U64(r.ipc.vmm_imported, 2);
    CHECK_EQ_U64(r.ipc.vmm_released, 2);
    cmt_replay_finish(&r, now);
    cmt_replay_free(&r);
}

/* What each failure's thread asked next: the same size served (an
 * allocator's probe), the same size failing again (its retry), another
 * size, or nothing. */
static void test_failure_next(void)
{
    struct cmt_replay r;
    CHECK(cmt_replay_init(&r) == 0);
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 0, 0, 1 << 20, 1, 800) == 0);
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CU_MEM_CREATE, 0, 0x10, 1 << 20, 1, 0) == 0); /* served */
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0, 1 << 30, 2, 2) == 0);
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0, 1 << 30, 2, 2) == 0);      /* failed again */
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0x100000, 1 << 20, 3, 0) == 0); /* another size */
    CHECK(event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0, 0, 1 << 30, 2, 2) == 0);      /* nothing after */
    cmt_replay_finish(&r, now);
    CHECK_EQ_U64(r.n_failures, 4);
    CHECK_EQ_U64(r.failures[0].next, CMT_NEXT_SAME_SERVED);
    CHECK_EQ_U64(r.failures[1].next, CMT_NEXT_SAME_FAILED);
    CHECK_EQ_U64(r.failures[2].next, CMT_NEXT_OTHER);
    CHECK_EQ_U64(r.failures[3].next, CMT_NEXT_UNSEEN);
    cmt_replay_free(&r);
}

/* A live view's replay (cmt_replay_live_only): the same accounts, peaks,
 * call sites' cells and high marks as a whole replay; no timeline, no
 * growth checkpoints. */
static void test_live_only(void)
{
    struct cmt_replay whole, live;
    CHECK(cmt_replay_init(&whole) == 0);
    CHECK(cmt_replay_init(&live) == 0);
    cmt_replay_set_origin(&whole, 1000);
    cmt_replay_live_only(&live);
    cmt_replay_set_origin(&live, 1000);
    for (int round = 0; round < 2; round++) {
        struct cmt_replay *r = round ? &live : &whole;
        now = 1000;
        alloc(r, CMT_API_CUDA_MALLOC, 0, 0x1000, 100, 1);
        alloc(r, CMT_API_CUDA_MALLOC, 0, 0x2000, 300, 2);
        release(r, CMT_API_CUDA_FREE, 0x1000);
        /* a late event, past the first growth interval */
        now += (uint64_t)1 << (CMT_GROWTH_FIRST_SHIFT + 3);
        alloc(r, CMT_API_CUDA_MALLOC, 0, 0x3000, 50, 1);
    }
    const struct cmt_account *a = cmt_replay_account(&whole, 0, CMT_CLASS_DEVICE);
    const struct cmt_account *b = cmt_replay_account(&live, 0, CMT_CLASS_DEVICE);
    CHECK(a && b);
    CHECK_EQ_U64(b->live, a->live);
    CHECK_EQ_U64(b->live, 350);
    CHECK_EQ_U64(b->peak, a->peak);
    CHECK_EQ_U64(b->peak, 400);
    CHECK_EQ_U64(b->peak_ts, a->peak_ts);
    CHECK_EQ_U64(b->high, 400); /* the highest since nobody reset it */
    for (uint32_t stack = 1; stack <= 2; stack++) {
        struct cmt_site_cell la, pa, lb, pb;
        CHECK(cmt_replay_site_cells(&whole, a, stack, &la, &pa));
        CHECK(cmt_replay_site_cells(&live, b, stack, &lb, &pb));
        CHECK_EQ_U64(lb.bytes, la.bytes);
        CHECK_EQ_U64(lb.count, la.count);
        CHECK_EQ_U64(pb.bytes, pa.bytes);
    }
    CHECK_EQ_U64(live.events, whole.events);
    CHECK(whole.growth.n > 0);          /* the whole replay checkpointed */
    CHECK_EQ_U64(live.growth.n, 0);     /* the live one never does */
    CHECK(cmt_timeline_find(&whole.timeline, 0, CMT_TIMELINE_TOTAL) != NULL);
    CHECK(cmt_timeline_find(&live.timeline, 0, CMT_TIMELINE_TOTAL) == NULL);
    cmt_replay_free(&whole);
    cmt_replay_free(&live);
}

int main(void)
{
    test_accounts_and_peaks();
    test_observers();
    test_observer_limit_and_failure();
    test_observer_changes_later();
    test_ipc();
    test_ipc_handle_imported_twice();
    test_failure_next();
    test_live_only();
    printf("replay: ok\n");
    return 0;
}
