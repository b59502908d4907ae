/* SPDX-License-Identifier: MIT */
/* Memory and time the analyzer spends on a hostile trace stay in proportion
 * to it: stack ids a trace cannot have defined name no stack, each account
 * holds only the call sites it saw, whatever their ids, and the module of an
 * address is found without a scan of every module. The results stay exact:
 * peak snapshots while the site tables grow, the module a scan would find. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "module_index.h"
#include "replay.h"
#include "trace_model.h"

static int failures;

#define CHECK_EQ(a, b)                                                                                   \
    do {                                                                                                 \
        uint64_t a_ = (uint64_t)(a), b_ = (uint64_t)(b);                                                 \
        if (a_ != b_) {                                                                                  \
            fprintf(stderr, "%s:%d: %s == %s failed: %" PRIu64 " != %" PRIu64 "\n", __FILE__, __LINE__, #a, \
                    #b, a_, b_);                                                                         \
            failures++;                                                                                  \
        }                                                                                                \
    } while (0)

static uint64_t now = 1000;

static void event(struct cmt_replay *r, uint8_t type, uint8_t api, int32_t device, uint64_t addr, uint64_t size,
                  uint64_t stack)
{
    struct cmt_event_in e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .device = device,
        .ts = now++,
        .addr = addr,
        .size = size,
        .stack = stack,
    };
    if (cmt_replay_event(r, &e) != 0) {
        fprintf(stderr, "replay ran out of memory\n");
        exit(1);
    }
}

static void alloc(struct cmt_replay *r, int32_t device, uint64_t addr, uint64_t size, uint64_t stack)
{
    event(r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, device, addr, size, stack);
}

static void release(struct cmt_replay *r, uint64_t addr)
{
    event(r, CMT_REC_FREE, CMT_API_CUDA_FREE, 0, addr, 0, 0);
}

static struct cmt_replay *current; /* the replay the helpers below read */

/* What the account holds for this stack, now and at its peak (zero cells,
 * and a failure, when it has none for it): mid-replay, a site's cell in its
 * home account is in its own record, the others in the account's table. */
static struct cmt_site_cell peak_of(const struct cmt_account *a, uint32_t stack)
{
    struct cmt_site_cell live, peak;
    if (cmt_replay_site_cells(current, a, stack, &live, &peak))
        return peak;
    fprintf(stderr, "stack %u has no cell\n", stack);
    failures++;
    return (struct cmt_site_cell){0, 0};
}

static struct cmt_site_cell live_of(const struct cmt_account *a, uint32_t stack)
{
    struct cmt_site_cell live, peak;
    if (cmt_replay_site_cells(current, a, stack, &live, &peak))
        return live;
    fprintf(stderr, "stack %u has no cell\n", stack);
    failures++;
    return (struct cmt_site_cell){0, 0};
}

/* After cmt_replay_finish every cell is in the table: read it there. */
static struct cmt_site_cell table_peak_of(const struct cmt_account *a, uint32_t stack)
{
    for (size_t i = 0; i < a->sites_cap; i++)
        if (cmt_account_site_stack(a, i) == stack)
            return a->site_peak[i];
    fprintf(stderr, "stack %u has no slot\n", stack);
    failures++;
    return (struct cmt_site_cell){0, 0};
}

static struct cmt_site_cell table_live_of(const struct cmt_account *a, uint32_t stack)
{
    for (size_t i = 0; i < a->sites_cap; i++)
        if (cmt_account_site_stack(a, i) == stack)
            return a->sites[i].live;
    fprintf(stderr, "stack %u has no slot\n", stack);
    failures++;
    return (struct cmt_site_cell){0, 0};
}

/* A 4 KiB trace cannot define stack 2^26 - 1: one allocation naming it on
 * every device and class costs a handful of small tables, not 2^26 cells per
 * account (about 5 GiB each before). */
static void test_undefinable_ids(void)
{
    struct cmt_replay r;
    if (cmt_replay_init(&r) != 0)
        exit(1);
    current = &r;
    cmt_replay_bound_stacks(&r, 4096);
    CHECK_EQ(r.stack_id_limit, 4096 / 5 + 1);
    uint64_t addr = 0x10000;
    for (int32_t d = -1; d < CMT_MAX_DEVICES; d++) {
        alloc(&r, d, addr += 0x1000, 64, CMT_MAX_STACK_ID - 1);
        event(&r, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC_MANAGED, d, addr += 0x1000, 32, CMT_MAX_STACK_ID - 1);
    }
    alloc(&r, 0, addr += 0x1000, 16, 4096 / 5); /* the largest id a 4 KiB trace can hold: kept */
    alloc(&r, 0, addr += 0x1000, 8, 4096 / 5 + 1);
    CHECK_EQ(r.sites_cap, 4096 / 5 + 1); /* not rounded up past the bound */
    const struct cmt_account *a = cmt_replay_account(&r, 0, CMT_CLASS_DEVICE);
    CHECK_EQ(a->sites_cap, 64);
    CHECK_EQ(a->n_sites + a->n_home, 2); /* cells held: table entries and home sites */
    CHECK_EQ(peak_of(a, 0).bytes, 64 + 8);
    CHECK_EQ(peak_of(a, 4096 / 5).bytes, 16);
    for (int32_t d = 0; d < CMT_MAX_DEVICES; d++) {
        const struct cmt_account *m = cmt_replay_account(&r, d, CMT_CLASS_MANAGED);
        CHECK_EQ(m->sites_cap, 64);
        CHECK_EQ(m->n_sites + m->n_home, 1);
        CHECK_EQ(peak_of(m, 0).count, 1);
    }
    /* Device -1 is host memory whatever the kind: both land there. */
    const struct cmt_account *host = cmt_replay_account(&r, -1, CMT_CLASS_HOST);
    CHECK_EQ(host->sites_cap, 64);
    CHECK_EQ(host->n_sites + host->n_home, 1);
    CHECK_EQ(peak_of(host, 0).bytes, 64 + 32);
    CHECK_EQ(peak_of(host, 0).count, 2);
    cmt_replay_free(&r);
}

/* Ids far apart (within the bound) cost one table entry each in the
 * account; before, the account's cells ran up to the largest id. */
static void test_sparse_ids(void)
{
    struct cmt_replay r;
    if (cmt_replay_init(&r) != 0)
        exit(1);
    current = &r;
    cmt_replay_bound_stacks(&r, 2 << 20);
    alloc(&r, 1, 0x1000, 100, 3);
    alloc(&r, 1, 0x2000, 200, 3);
    alloc(&r, 1, 0x3000, 300, 200000);
    const struct cmt_account *a = cmt_replay_account(&r, 1, CMT_CLASS_DEVICE);
    CHECK_EQ(a->sites_cap, 64);
    CHECK_EQ(a->n_sites + a->n_home, 2);
    CHECK_EQ(peak_of(a, 3).bytes, 300);
    CHECK_EQ(peak_of(a, 3).count, 2);
    CHECK_EQ(peak_of(a, 200000).bytes, 300);
    CHECK_EQ(r.sites[200000].allocs, 1);
    cmt_replay_free(&r);
}

/* Sites changed since the last peak survive the table growing under them:
 * after a big allocation is freed, 1000 sites counted first on device 1
 * (their home account) come to device 0, whose table grows twice over
 * before the live total passes the old peak; a site at home on device 0
 * changed before the growth is listed apart. The new peak snapshot must
 * hold every site's bytes at that instant, and after cmt_replay_finish the
 * table must hold every cell. */
static void test_peak_across_growth(void)
{
    struct cmt_replay r;
    if (cmt_replay_init(&r) != 0)
        exit(1);
    current = &r;
    cmt_replay_bound_stacks(&r, 1 << 20);
    alloc(&r, 0, 0x100, 1000000, 5000); /* peak 1,000,000 */
    release(&r, 0x100);
    alloc(&r, 0, 0x800000, 7, 4500); /* at home on device 0, changed since the peak */
    uint64_t live = 7;
    for (uint32_t s = 1; s <= 1000; s++) {
        alloc(&r, 1, 0x40000000 + s * 0x100, 1, s); /* home: device 1 */
        release(&r, 0x40000000 + s * 0x100);
        alloc(&r, 0, 0x100000 + s * 0x100, s, s);
        live += s;
    }
    CHECK_EQ(live, 500507);
    alloc(&r, 0, 0x900000, 600000, 4000); /* new peak: 1,100,507 */
    const struct cmt_account *a = cmt_replay_account(&r, 0, CMT_CLASS_DEVICE);
    CHECK_EQ(a->peak, 1100507);
    CHECK_EQ(a->n_sites, 1000);   /* sites 1..1000, in the table */
    CHECK_EQ(a->n_home, 3);       /* 5000, 4500, 4000 */
    CHECK_EQ(a->sites_cap, 2048); /* at most half full */
    CHECK_EQ(peak_of(a, 5000).bytes, 0);
    CHECK_EQ(peak_of(a, 5000).count, 0);
    CHECK_EQ(peak_of(a, 4500).bytes, 7);
    CHECK_EQ(peak_of(a, 4000).bytes, 600000);
    uint64_t sum = 0;
    for (uint32_t s = 1; s <= 1000; s++) {
        struct cmt_site_cell peak = peak_of(a, s);
        CHECK_EQ(peak.bytes, s);
        CHECK_EQ(peak.count, 1);
        sum += peak.bytes;
    }
    CHECK_EQ(sum, 500500);
    /* Later changes below the peak leave the snapshot alone. */
    release(&r, 0x900000);
    release(&r, 0x100000 + 10 * 0x100);
    CHECK_EQ(peak_of(a, 4000).bytes, 600000);
    CHECK_EQ(live_of(a, 4000).bytes, 0);
    CHECK_EQ(peak_of(a, 10).bytes, 10);
    CHECK_EQ(live_of(a, 10).bytes, 0);
    /* Device 1's cells: each site allocated and released there. */
    const struct cmt_account *d1 = cmt_replay_account(&r, 1, CMT_CLASS_DEVICE);
    CHECK_EQ(d1->n_home, 1000);
    CHECK_EQ(d1->n_sites, 0);
    CHECK_EQ(live_of(d1, 77).count, 0);
    /* After the replay the tables hold every cell, home ones included,
     * with the same live and peak figures. */
    cmt_replay_finish(&r, now);
    CHECK_EQ(a->n_sites, 1003);
    CHECK_EQ(d1->n_sites, 1000);
    CHECK_EQ(table_peak_of(a, 4000).bytes, 600000);
    CHECK_EQ(table_live_of(a, 4000).bytes, 0);
    CHECK_EQ(table_peak_of(a, 4500).bytes, 7);
    CHECK_EQ(table_live_of(a, 4500).bytes, 7);
    CHECK_EQ(table_peak_of(a, 5000).bytes, 0);
    CHECK_EQ(table_peak_of(a, 10).bytes, 10);
    CHECK_EQ(table_live_of(a, 10).bytes, 0);
    CHECK_EQ(table_live_of(d1, 77).count, 0);
    /* device 1 held one at a time: its peak was the first, site 1's */
    CHECK_EQ(table_peak_of(d1, 1).count, 1);
    CHECK_EQ(table_peak_of(d1, 77).count, 0);
    cmt_replay_free(&r);
}

/* Timestamps are the trace's to choose: an event at the end of 64-bit time
 * completes every checkpoint interval that ends before it, no more, and
 * the replay ends (the interval length used to double past 64 bits while
 * the interval ends wrapped round: a hang, found by the fuzzer). */
static void test_checkpoints_at_end_of_time(void)
{
    struct cmt_replay r;
    if (cmt_replay_init(&r) != 0)
        exit(1);
    current = &r;
    cmt_replay_set_origin(&r, 0);
    struct cmt_event_in e = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = CMT_KIND_DEVICE,
                             .ts = 1000, .addr = 0x1000, .size = 64, .stack = 1};
    CHECK_EQ(cmt_replay_event(&r, &e), 0);
    e.ts = UINT64_MAX - 1;
    e.addr = 0x2000;
    CHECK_EQ(cmt_replay_event(&r, &e), 0);
    cmt_replay_finish(&r, UINT64_MAX);
    /* Intervals of 2^57 ns: ends at 2^57 .. 127 * 2^57 < 2^64 complete, the
     * 128th would end at 2^64. Kept in 64 slots: 2^58 ns each, 63 of them. */
    CHECK_EQ(r.growth.shift, 58);
    CHECK_EQ(r.growth.n, 63);
    CHECK_EQ(cmt_replay_checkpoint_ts(&r, 62), 63ull << 58);
    CHECK_EQ(r.growth.next_ts, UINT64_MAX);
    CHECK_EQ(r.sites[1].allocs, 2);
    cmt_replay_free(&r);

    /* A trace that starts at the end of time has no interval that ends. */
    if (cmt_replay_init(&r) != 0)
        exit(1);
    cmt_replay_set_origin(&r, UINT64_MAX - 1000);
    CHECK_EQ(r.growth.next_ts, UINT64_MAX);
    e.ts = UINT64_MAX;
    CHECK_EQ(cmt_replay_event(&r, &e), 0);
    cmt_replay_finish(&r, UINT64_MAX);
    CHECK_EQ(r.growth.n, 0);
    cmt_replay_free(&r);
}

/* The newest module up to max_id holding ip, the way frames.c used to scan. */
static uint32_t scan_modules(const struct cmt_trace_model *m, uint64_t ip, uint32_t max_id)
{
    for (uint32_t id = max_id + 1; id-- > 1;)
        if (id < m->n_modules && ip >= m->modules[id].lo && ip < m->modules[id].hi)
            return id;
    return 0;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Overlapping, nested, empty and inverted ranges, at the ends of the address
 * space too: every lookup agrees with the scan. */
static void test_module_index(void)
{
    for (int round = 0; round < 20; round++) {
        struct cmt_trace_model m;
        cmt_model_init(&m);
        unsigned n = 1 + (unsigned)(next_random() % 300);
        for (uint32_t id = 1; id <= n; id++) {
            uint64_t lo = next_random() % 5000, hi = lo + next_random() % 800;
            if (id % 17 == 0)
                hi = lo; /* empty */
            if (id % 23 == 0)
                hi = lo - 1; /* inverted */
            if (id % 29 == 0) {
                lo = UINT64_MAX - 100;
                hi = UINT64_MAX;
            }
            struct cmt_module_in in = {.id = id, .lo = lo, .hi = hi};
            cmt_model_on_module(&m, &in);
        }
        struct cmt_module_index *x = cmt_module_index_new(&m);
        if (!x)
            exit(1);
        for (int q = 0; q < 3000; q++) {
            uint64_t ip = q % 10 == 0 ? UINT64_MAX - next_random() % 200 : next_random() % 6000;
            uint32_t max_id = (uint32_t)(next_random() % (n + 2));
            CHECK_EQ(cmt_module_index_find(x, ip, max_id), scan_modules(&m, ip, max_id));
        }
        cmt_module_index_free(x);
        cmt_model_free(&m);
    }
    /* No modules at all. */
    struct cmt_trace_model empty;
    cmt_model_init(&empty);
    struct cmt_module_index *x = cmt_module_index_new(&empty);
    CHECK_EQ(cmt_module_index_find(x, 0x1000, 0), 0);
    cmt_module_index_free(x);
}

int main(void)
{
    test_module_index();
    test_undefinable_ids();
    test_sparse_ids();
    test_peak_across_growth();
    test_checkpoints_at_end_of_time();
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
