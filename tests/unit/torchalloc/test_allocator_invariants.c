/* SPDX-License-Identifier: MIT */
/* The caching allocator model under long random sequences: after every
 * request, release, completion and empty_cache, each segment's blocks tile
 * it, the reserve and the allocated bytes are the sums of what holds them,
 * no two free neighbours of one mapping state are left unjoined, and every
 * cached block sits in its pool's ordered set in order. Settings of every
 * kind, a device small enough that requests fail and the cache is given
 * back, two streams, releases completed late. */
#include "ta_internal.h"

#include "test_util.h"

#define MiB (1024ull * 1024ull)

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_random(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t request_size(void)
{
    switch (next_random() % 4) {
    case 0:
        return 1 + next_random() % MiB;
    case 1:
        return MiB + next_random() % (9 * MiB);
    case 2:
        return 10 * MiB + next_random() % (90 * MiB);
    default:
        return 100 * MiB + next_random() % (300 * MiB);
    }
}

/* In-order walk of a set: sorted, every node flagged, the count returned. */
static size_t check_set(const struct cmt_ta_allocator *a, const struct ta_set *s)
{
    size_t n = 0;
    uint32_t prev = TA_NIL;
    for (uint32_t i = ta_set_first(a, s); i != TA_NIL; i = ta_set_next(a, i)) {
        CHECK(a->b[i].flags & TA_IN_SET);
        CHECK(!(a->b[i].flags & (TA_ALLOCATED | TA_PENDING)));
        CHECK(!!(a->b[i].flags & TA_MAPPED) == !s->by_address);
        if (prev != TA_NIL) {
            const struct ta_block *p = &a->b[prev], *k = &a->b[i];
            bool ordered = p->stream != k->stream ? p->stream < k->stream
                           : !s->by_address && p->size != k->size ? p->size < k->size
                                                                   : p->addr < k->addr;
            CHECK(ordered);
        }
        prev = i;
        n++;
    }
    return n;
}

static void check(const struct cmt_ta_allocator *a)
{
    uint64_t reserved = 0, allocated = 0;
    size_t in_set = 0, in_sets = 0;
    for (uint32_t i = 0; i < a->n_blocks; i++) {
        const struct ta_block *k = &a->b[i];
        if (!k->flags)
            continue; /* deleted */
        if (k->flags & TA_IN_SET)
            in_set++;
        if (k->flags & TA_ALLOCATED)
            allocated += k->size;
        if (k->next != TA_NIL) {
            const struct ta_block *n = &a->b[k->next];
            CHECK(n->prev == i);
            CHECK(k->addr + k->size == n->addr);
            CHECK(n->es == k->es && n->pool == k->pool && n->stream == k->stream);
            bool both_free = !(k->flags & (TA_ALLOCATED | TA_PENDING)) && !(n->flags & (TA_ALLOCATED | TA_PENDING));
            CHECK(!both_free || ((k->flags ^ n->flags) & TA_MAPPED)); /* joined when alike */
        }
        if (k->prev != TA_NIL)
            continue;
        /* a segment's head: its blocks tile it */
        uint64_t total = 0, mapped = 0;
        for (uint32_t j = i; j != TA_NIL; j = a->b[j].next) {
            total += a->b[j].size;
            if (a->b[j].flags & TA_MAPPED)
                mapped += a->b[j].size;
        }
        if (k->es) {
            const struct ta_es *e = &a->es[k->es - 1];
            CHECK(e->live && k->addr == e->base && total == e->pages * e->page);
        }
        reserved += mapped;
    }
    CHECK_EQ_U64(reserved, a->st.reserved);
    CHECK_EQ_U64(allocated, a->st.allocated);
    uint64_t by_class = 0;
    for (unsigned c = 0; c < CMT_TA_CLASS_COUNT; c++)
        by_class += a->st.cls[c].reserved;
    CHECK_EQ_U64(by_class, a->st.reserved);
    for (uint32_t p = 0; p < a->n_pools; p++)
        in_sets += check_set(a, &a->pools[p].blocks) + check_set(a, &a->pools[p].unmapped);
    CHECK_EQ_U64(in_sets, in_set);
    CHECK(a->st.reserved <= a->st.peak_reserved);
    CHECK(a->st.allocated <= a->st.peak_allocated);
}

#define SLOTS 64

static void run(const char *conf, uint64_t limit, unsigned ops)
{
    struct cmt_ta_settings s;
    char err[160];
    CHECK(cmt_ta_settings_parse(conf, &s, err, sizeof err) == 0);
    struct cmt_ta_allocator *a = cmt_ta_new(&s, 8ull << 30);
    CHECK(a != NULL);
    cmt_ta_set_limit(a, limit);
    if (s.fraction_set)
        cmt_ta_set_allowed(a, (uint64_t)(s.memory_fraction * (double)limit));
    bool live[SLOTS] = {false}, pending[SLOTS] = {false};
    uint64_t served = 0, failed = 0;
    for (unsigned op = 0; op < ops; op++) {
        uint32_t slot = (uint32_t)(next_random() % SLOTS);
        uint64_t r = next_random() % 100;
        if (r == 0) {
            cmt_ta_empty_cache(a);
        } else if (pending[slot]) {
            cmt_ta_free_completed(a, slot);
            pending[slot] = false;
        } else if (live[slot]) {
            cmt_ta_free_requested(a, slot);
            live[slot] = false;
            if (r < 80)
                cmt_ta_free_completed(a, slot);
            else
                pending[slot] = true; /* used on another stream: completed later */
        } else {
            int rc = cmt_ta_malloc(a, slot, request_size(), r % 4 ? 0 : 7, 0, 0, NULL);
            CHECK(rc >= 0);
            live[slot] = rc == 0;
            CHECK(cmt_ta_slot_live(a, slot) == (rc == 0));
            served += rc == 0;
            failed += rc == 1;
        }
        check(a);
    }
    /* the limit made requests fail, and the cache was given back for them */
    CHECK(served > 0 && failed > 0);
    CHECK(a->st.retries > 0);
    CHECK(a->st.peak_reserved <= limit);
    printf("%-48s %" PRIu64 " served, %" PRIu64 " failed, peak %" PRIu64 " MiB\n", conf[0] ? conf : "(defaults)",
           served, failed, (uint64_t)(a->st.peak_reserved / MiB));
    cmt_ta_free_allocator(a);
}

int main(void)
{
    static const char *const confs[] = {"",
                                        "expandable_segments:True",
                                        "max_split_size_mb:64",
                                        "max_split_size_mb:64,expandable_segments:True",
                                        "roundup_power2_divisions:4",
                                        "roundup_power2_divisions:[64:8,256:4,>:1]",
                                        "garbage_collection_threshold:0.5,per_process_memory_fraction:0.8",
                                        "large_segment_size_mb:40,max_non_split_rounding_mb:64,max_split_size_mb:128"};
    for (size_t i = 0; i < sizeof confs / sizeof confs[0]; i++)
        run(confs[i], 3ull << 30, 20000);
    printf("allocator invariants: ok\n");
    return 0;
}
