/* SPDX-License-Identifier: MIT */
/* Allocations paired with their releases on the reading thread (pairing.h):
 * one trace of every case the pairing must keep as the replay's hash table
 * kept them, read through the feed with one thread and with two, and
 * replayed event by event without the feed (cmt_replay_event: nothing
 * paired, the engine as before). The three replays must agree on every
 * figure, on every change the observers saw (in order, with its fields),
 * on the live set at the end and on what cmt_live_set_find finds; the
 * figures are also checked against what the scenario implies.
 *
 * The cases: an address allocated again while live (its release went
 * unrecorded); a release of an address never allocated; a failed release
 * of a live address; a zero-byte allocation (address 0); an address freed
 * and allocated again (its id reused); a pointer freed through the array
 * API (another namespace: unmatched); arrays, reservations and pointers
 * with the same address (three namespaces); VMM handles and mappings
 * interleaved with pointers (never paired: unmapped by span, released
 * after the last unmap); allocations of 300 threads (beyond the live set's
 * 255 thread indexes); 3,000 allocations live at once (the pairing's and
 * the slots' tables grow), released in another order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis.h"
#include "pairing.h"
#include "test_util.h"
#include "trace_builder.h"

#define START 1000000000ull
#define MANY 3000
#define THREADS 300

struct change {
    uint64_t addr, size, ts, event_ts;
    uint32_t stack, tid;
    int32_t device;
    uint8_t ns, kind, api, live;
};

struct changes {
    struct change *v;
    size_t n, cap;
};

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct changes *c = ctx;
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 1024;
        c->v = realloc(c->v, c->cap * sizeof *c->v);
        CHECK(c->v != NULL);
    }
    c->v[c->n++] = (struct change){
        .addr = l->addr,
        .size = l->size,
        .ts = l->ts,
        .event_ts = r->event ? r->event->ts : 0,
        .stack = l->stack,
        .tid = l->tid,
        .device = l->device,
        .ns = l->ns,
        .kind = l->kind,
        .api = l->api,
        .live = live,
    };
    return 0;
}

static uint64_t now = 100;

static void event(struct cmt_trace_builder *b, uint32_t tid, uint8_t type, uint8_t api, uint64_t addr, uint64_t size,
                  int32_t result, uint64_t aux0)
{
    struct cmt_event e = {
        .type = type,
        .api = api,
        .kind = (uint8_t)cmt_api_default_kind(api),
        .has_device = true,
        .device = 0,
        .ts = START + (now += 10),
        .addr = addr,
        .size = size,
        .result = result,
        .stack = 0,
        .aux = {aux0},
    };
    CHECK(cmt_tb_event(b, tid, &e) == 0);
}

#define ALLOC(api, addr, size) event(b, 7, CMT_REC_ALLOC, CMT_API_##api, addr, size, 0, 0)
#define FREE(api, addr) event(b, 7, CMT_REC_FREE, CMT_API_##api, addr, 0, 0, 0)

static void write_trace(const char *path)
{
    struct cmt_trace_builder_options opt = {.pid = 42, .start_monotonic_ns = START, .clean_exit = true};
    struct cmt_trace_builder *b = cmt_tb_create(path, &opt);
    CHECK(b != NULL);
    /* allocated again while live: 100 bytes gone, 200 live */
    ALLOC(CUDA_MALLOC, 0x1000, 100);
    ALLOC(CUDA_MALLOC, 0x1000, 200);
    /* never allocated */
    FREE(CUDA_FREE, 0x5000);
    /* a failed release leaves it live; address 0 is nothing live */
    event(b, 7, CMT_REC_FREE, CMT_API_CUDA_FREE, 0x1000, 0, 1, 0);
    ALLOC(CUDA_MALLOC, 0, 0);
    /* freed and allocated again: the same id, a new allocation */
    ALLOC(CUDA_MALLOC, 0x2000, 300);
    FREE(CUDA_FREE, 0x2000);
    ALLOC(CUDA_MALLOC, 0x2000, 400);
    /* an array at 0x3000 and a pointer at 0x3000: two namespaces; the
     * pointer released through the array API is not found */
    ALLOC(CUDA_MALLOC_ARRAY, 0x3000, 500);
    ALLOC(CUDA_MALLOC, 0x3000, 600);
    FREE(CUDA_FREE_ARRAY, 0x4000);
    FREE(CUDA_FREE_ARRAY, 0x3000);
    /* VMM: a handle, a reservation at the pointer's address, a mapping,
     * interleaved with pointers; unmapped by span, then released */
    ALLOC(CU_MEM_CREATE, 0xabc0, 1 << 20);
    ALLOC(CU_MEM_ADDRESS_RESERVE, 0x3000, 4 << 20);
    ALLOC(CUDA_MALLOC, 0x7000, 700);
    event(b, 7, CMT_REC_ALLOC, CMT_API_CU_MEM_MAP, 0x3000, 1 << 20, 0, 0xabc0);
    FREE(CU_MEM_RELEASE, 0xabc0); /* still mapped: stays */
    FREE(CUDA_FREE, 0x7000);
    ALLOC(CUDA_MALLOC, 0x7000, 800);
    event(b, 7, CMT_REC_FREE, CMT_API_CU_MEM_UNMAP, 0x3000, 4 << 20, 0, 0);
    FREE(CU_MEM_ADDRESS_FREE, 0x3000);
    ALLOC(CU_MEM_ADDRESS_RESERVE, 0x3000, 8 << 20); /* live at exit */
    FREE(CUDA_FREE, 0x3000);
    ALLOC(CU_ARRAY_CREATE, 0x8000, 900); /* live at exit */
    /* a kind this analyzer does not know: a bad event, never live */
    struct cmt_event bad = {.type = CMT_REC_ALLOC, .api = CMT_API_CUDA_MALLOC, .kind = 20, .has_device = true,
                            .ts = START + (now += 10), .addr = 0x9000, .size = 1};
    CHECK(cmt_tb_event(b, 7, &bad) == 0);
    FREE(CUDA_FREE, 0x9000);
    /* many threads */
    for (uint32_t t = 0; t < THREADS; t++)
        event(b, 1000 + t, CMT_REC_ALLOC, CMT_API_CUDA_MALLOC, 0x100000 + t * 0x100, 16, 0, 0);
    for (uint32_t t = 0; t < THREADS; t += 2)
        event(b, 5, CMT_REC_FREE, CMT_API_CUDA_FREE, 0x100000 + t * 0x100, 0, 0, 0);
    /* many live at once, released in another order, some allocated again */
    for (uint64_t i = 0; i < MANY; i++)
        ALLOC(CUDA_MALLOC, 0x10000000 + i * 0x1000, 1000 + i);
    for (uint64_t i = 0; i < MANY; i += 3)
        FREE(CUDA_FREE, 0x10000000 + (MANY - 1 - i) * 0x1000);
    for (uint64_t i = 0; i < MANY; i += 5)
        ALLOC(CUDA_MALLOC, 0x10000000 + i * 0x1000, 7);
    for (uint64_t i = 1; i < MANY; i += 3)
        FREE(CUDA_FREE, 0x10000000 + i * 0x1000);
    cmt_tb_end(b, START + now + 100, 0);
    CHECK(cmt_tb_close(b) == 0);
}

/* The reference: every event to cmt_replay_event, nothing paired. */
struct plain {
    struct cmt_replay *r;
};

static int plain_event(void *ctx, const struct cmt_event_in *e)
{
    struct plain *p = ctx;
    CHECK(cmt_replay_event(p->r, e) == 0);
    return 0;
}

static void replay_plain(const char *path, struct cmt_replay *r, const struct cmt_replay_observer *o)
{
    CHECK(cmt_replay_init(r) == 0);
    CHECK(cmt_replay_add_observer(r, o) == 0);
    struct cmt_reader *reader = NULL;
    char err[CMT_READER_MESSAGE_MAX];
    CHECK(cmt_reader_open(path, &reader, err, sizeof err) == 0);
    struct plain p = {r};
    struct cmt_reader_callbacks cb = {.on_event = plain_event};
    CHECK(cmt_reader_run(reader, &cb, &p) == 0);
    cmt_reader_close(reader);
    cmt_replay_finish(r, r->last_ts);
}

static int by_key(const void *a, const void *b)
{
    const struct cmt_live *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The live set's entries, sorted by (namespace, address). */
static struct cmt_live *live_entries(const struct cmt_live_set *s, size_t *n)
{
    struct cmt_live *v = calloc(s->count + 1, sizeof *v);
    CHECK(v != NULL);
    size_t k = 0;
    struct cmt_live l;
    for (size_t i = 0; i < cmt_live_set_end(s); i++)
        if (cmt_live_set_at(s, i, &l)) {
            CHECK(k < s->count);
            v[k++] = l;
        }
    CHECK_EQ_U64(k, s->count);
    qsort(v, k, sizeof *v, by_key);
    *n = k;
    return v;
}

static void same_live(const struct cmt_live *a, const struct cmt_live *b)
{
    CHECK_EQ_U64(a->addr, b->addr);
    CHECK_EQ_U64(a->size, b->size);
    CHECK_EQ_U64(a->ts, b->ts);
    CHECK_EQ_U64(a->stack, b->stack);
    CHECK_EQ_U64((uint64_t)(int64_t)a->device, (uint64_t)(int64_t)b->device);
    CHECK_EQ_U64(a->ns, b->ns);
    CHECK_EQ_U64(a->kind, b->kind);
    CHECK_EQ_U64(a->api, b->api);
    CHECK_EQ_U64(a->tid, b->tid);
    CHECK_EQ_U64(a->aux, b->aux);
}

static void same_replay(const struct cmt_replay *a, const struct cmt_replay *b)
{
    CHECK_EQ_U64(a->events, b->events);
    CHECK_EQ_U64(a->allocs, b->allocs);
    CHECK_EQ_U64(a->frees, b->frees);
    CHECK_EQ_U64(a->failed_allocs, b->failed_allocs);
    CHECK_EQ_U64(a->failed_frees, b->failed_frees);
    CHECK_EQ_U64(a->unmatched_frees, b->unmatched_frees);
    CHECK_EQ_U64(a->reused_addresses, b->reused_addresses);
    CHECK_EQ_U64(a->bad_events, b->bad_events);
    CHECK_EQ_U64(a->live.count, b->live.count);
    CHECK(memcmp(a->virt, b->virt, sizeof a->virt) == 0);
    for (int d = 0; d <= CMT_MAX_DEVICES; d++)
        for (int c = 0; c < CMT_CLASS_COUNT; c++) {
            const struct cmt_account *x = a->accounts[d][c], *y = b->accounts[d][c];
            CHECK((x == NULL) == (y == NULL));
            if (!x)
                continue;
            CHECK_EQ_U64(x->live, y->live);
            CHECK_EQ_U64(x->live_count, y->live_count);
            CHECK_EQ_U64(x->peak, y->peak);
            CHECK_EQ_U64(x->peak_ts, y->peak_ts);
            CHECK_EQ_U64(x->peak_count, y->peak_count);
            CHECK(memcmp(x->live_by_kind, y->live_by_kind, sizeof x->live_by_kind) == 0);
            CHECK(memcmp(x->peak_by_kind, y->peak_by_kind, sizeof x->peak_by_kind) == 0);
        }
    size_t na, nb;
    struct cmt_live *la = live_entries(&a->live, &na), *lb = live_entries(&b->live, &nb);
    CHECK_EQ_U64(na, nb);
    for (size_t i = 0; i < na; i++) {
        same_live(&la[i], &lb[i]);
        /* found by key, whichever part of the set holds it */
        struct cmt_live fa, fb;
        CHECK(cmt_live_set_find(&a->live, la[i].ns, la[i].addr, &fa));
        CHECK(cmt_live_set_find(&b->live, lb[i].ns, lb[i].addr, &fb));
        same_live(&fa, &la[i]);
        same_live(&fb, &lb[i]);
    }
    free(la);
    free(lb);
    /* and not found where nothing is live */
    static const uint64_t absent[] = {0x5000, 0x4000, 0x10000000 + 0x1000, 0x100000};
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        for (uint8_t ns = 0; ns < CMT_NS_COUNT; ns++)
            CHECK(!cmt_live_set_find(&a->live, ns, absent[i], NULL) && !cmt_live_set_find(&b->live, ns, absent[i], NULL));
}

static void same_changes(const struct changes *a, const struct changes *b)
{
    CHECK_EQ_U64(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const struct change *x = &a->v[i], *y = &b->v[i];
        CHECK_EQ_U64(x->addr, y->addr);
        CHECK_EQ_U64(x->size, y->size);
        CHECK_EQ_U64(x->ts, y->ts);
        CHECK_EQ_U64(x->event_ts, y->event_ts);
        CHECK_EQ_U64(x->stack, y->stack);
        CHECK_EQ_U64(x->tid, y->tid);
        CHECK_EQ_U64((uint64_t)(int64_t)x->device, (uint64_t)(int64_t)y->device);
        CHECK_EQ_U64(x->ns, y->ns);
        CHECK_EQ_U64(x->kind, y->kind);
        CHECK_EQ_U64(x->api, y->api);
        CHECK_EQ_U64(x->live, y->live);
    }
}

/* What the scenario implies. */
static void check_figures(const struct cmt_replay *r)
{
    /* The many: all allocated; those at i % 3 == 2 released (counted down
     * from MANY - 1 = 2999, step 3); i % 5 == 0 allocated again: i % 15 ==
     * 5 lands on a released address (new), the others on live ones
     * (reused); then those at i % 3 == 1 released. */
    uint64_t again = 0, again_new = 0;
    for (uint64_t i = 0; i < MANY; i += 5) {
        again++;
        again_new += i % 3 == 2;
    }
    CHECK_EQ_U64(again, 600);
    CHECK_EQ_U64(again_new, 200);
    uint64_t many_freed = 2 * (MANY / 3);
    uint64_t many_live = MANY - many_freed + again_new;
    CHECK_EQ_U64(many_live, 1200);
    /* 0x1000 allocated again while live, and the many's */
    CHECK_EQ_U64(r->reused_addresses, 1 + (again - again_new));
    /* 0x5000 never allocated, 0x4000 through the array API, 0x9000 */
    CHECK_EQ_U64(r->unmatched_frees, 3);
    CHECK_EQ_U64(r->failed_frees, 1);
    CHECK_EQ_U64(r->bad_events, 1);
    /* 0x1000 twice, address 0, 0x2000 twice, the array and the pointer at
     * 0x3000, the handle, the reservation, 0x7000, the mapping, 0x7000
     * again, the second reservation, the array at 0x8000 */
    CHECK_EQ_U64(r->allocs, 14 + THREADS + MANY + again);
    /* 0x2000, the array at 0x3000, the handle (cuMemRelease), 0x7000, the
     * mapping (cuMemUnmap: the handle goes with it, counted once), the
     * reservation, the pointer at 0x3000 */
    CHECK_EQ_U64(r->frees, 7 + THREADS / 2 + many_freed);
    /* 0x1000 (200 bytes), 0x2000 (400), 0x7000 (800), the second
     * reservation, the array at 0x8000 */
    CHECK_EQ_U64(r->live.count, 5 + THREADS / 2 + many_live);
    const struct cmt_account *a = r->accounts[1][CMT_CLASS_DEVICE];
    CHECK(a != NULL);
    uint64_t threads_live = 16 * (THREADS / 2), many_bytes = 0;
    for (uint64_t i = 0; i < MANY; i++)
        if (i % 3 == 0 || (i % 3 == 2 && i % 5 == 0))
            many_bytes += i % 5 == 0 ? 7 : 1000 + i;
    /* the reservation is address space, not memory */
    CHECK_EQ_U64(a->live, 200 + 400 + 800 + 900 + threads_live + many_bytes);
    CHECK_EQ_U64(a->live_count, 4 + THREADS / 2 + many_live);
    CHECK_EQ_U64(r->virt[1].reserve_live, 8 << 20);
    CHECK_EQ_U64(r->virt[1].physical_live, 0);
    CHECK_EQ_U64(r->virt[1].map_live, 0);
}

int main(void)
{
    char dir[] = "/tmp/cmt-test-pairing-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char path[128];
    snprintf(path, sizeof path, "%s/t.bin", dir);
    write_trace(path);

    struct changes ref_changes = {0};
    const struct cmt_replay_observer ref_o = {.ctx = &ref_changes, .on_change = on_change};
    struct cmt_replay ref;
    replay_plain(path, &ref, &ref_o);
    CHECK(ref.pairing == NULL && ref.live.id_cap == 0); /* nothing paired */
    check_figures(&ref);

    static const char *const threads[] = {"1", "2"};
    for (size_t t = 0; t < 2; t++) {
        CHECK(setenv("CUMEMTRACE_ANALYZER_THREADS", threads[t], 1) == 0);
        struct changes mine = {0};
        const struct cmt_replay_observer o = {.ctx = &mine, .on_change = on_change};
        const struct cmt_replay_observer *list[] = {&o};
        struct cmt_analysis_options opt = {.forensics = true, .observers = list, .n_observers = 1};
        struct cmt_analysis a;
        CHECK(cmt_analysis_run_with(&a, path, 0, &opt) == 0);
        /* paired: the slots by id hold the pointers, arrays and
         * reservations, the table the VMM handles and mappings only */
        CHECK(a.replay.pairing != NULL);
        CHECK(a.replay.live.id_cap >= MANY);
        CHECK_EQ_U64(a.replay.live.table_count, 0); /* the handle and the mapping went */
        CHECK_EQ_U64(a.replay.pairing->count, a.replay.live.count);
        check_figures(&a.replay);
        same_replay(&a.replay, &ref);
        same_changes(&mine, &ref_changes);
        free(mine.v);
        cmt_analysis_free(&a);
    }
    free(ref_changes.v);
    cmt_replay_free(&ref);
    unlink(path);
    rmdir(dir);
    printf("pairing: ok\n");
    return 0;
}
