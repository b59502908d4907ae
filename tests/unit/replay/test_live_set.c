/* SPDX-License-Identifier: MIT */
/* The live set against a plain reference model: random puts, replacements
 * and takes across growth, with keys chosen to collide in probe runs, so
 * backward-shift deletion must keep every entry reachable; the allocating
 * threads drawn from 600, more than the set keeps by index
 * (CMT_LIVE_THREADS), so entries of both kinds replace each other. */
#include "live_set.h"
#include "test_util.h"

#define KEYS 6000

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

struct ref {
    bool live;
    struct cmt_live v;
};

static struct ref model[KEYS];

static uint64_t key_addr(size_t k)
{
    /* Half the keys share the pointer namespace and 256-byte alignment,
     * half are VMM handles: small integers in another namespace. */
    return k % 2 ? 0x7f0000000000ull + (k / 2) * 256 : k / 2 + 1;
}

static uint8_t key_ns(size_t k)
{
    return k % 2 ? CMT_NS_POINTER : CMT_NS_VMM_HANDLE;
}

static void check_equal(const struct cmt_live *a, const struct cmt_live *b)
{
    CHECK_EQ_U64(a->addr, b->addr);
    CHECK_EQ_U64(a->size, b->size);
    CHECK_EQ_U64(a->ts, b->ts);
    CHECK_EQ_U64(a->stack, b->stack);
    CHECK(a->device == b->device);
    CHECK_EQ_U64(a->ns, b->ns);
    CHECK_EQ_U64(a->kind, b->kind);
    CHECK_EQ_U64(a->api, b->api);
    CHECK_EQ_U64(a->tid, b->tid);
}

int main(void)
{
    struct cmt_live_set s;
    CHECK(cmt_live_set_init(&s) == 0);
    size_t live = 0;
    for (unsigned round = 0; round < 400000; round++) {
        size_t k = next_rand() % KEYS;
        struct cmt_live got;
        if (next_rand() % 3) {
            struct cmt_live v = {.addr = key_addr(k), .size = next_rand() % 100000, .ts = round,
                                 .stack = (uint32_t)(next_rand() % 500), .device = (int32_t)(k % 5) - 1,
                                 .ns = key_ns(k), .kind = (uint8_t)(k % 8), .api = (uint8_t)(k % 40),
                                 .tid = 1000 + (uint32_t)(next_rand() % 600)};
            struct cmt_live old;
            int rc = cmt_live_set_put(&s, &v, &old);
            CHECK(rc == (model[k].live ? 1 : 0));
            if (rc == 1)
                check_equal(&old, &model[k].v);
            if (!model[k].live)
                live++;
            model[k].live = true;
            model[k].v = v;
        } else {
            bool had = cmt_live_set_take(&s, key_ns(k), key_addr(k), &got);
            CHECK(had == model[k].live);
            if (had) {
                check_equal(&got, &model[k].v);
                CHECK(got.used);
                model[k].live = false;
                live--;
            }
        }
        CHECK_EQ_U64(s.count, live);
        if (round % 50000 == 0) {
            /* every entry findable, nothing else iterated */
            size_t seen = 0;
            for (size_t i = 0; i < s.cap; i++)
                if (cmt_live_set_at(&s, i, &got))
                    seen++;
            CHECK_EQ_U64(seen, live);
            for (size_t j = 0; j < KEYS; j++) {
                bool found = cmt_live_set_find(&s, key_ns(j), key_addr(j), &got);
                CHECK(found == model[j].live);
                if (found)
                    check_equal(&got, &model[j].v);
            }
        }
    }
    CHECK_EQ_U64(s.threads.n, CMT_LIVE_THREADS);
    CHECK(s.tids.count > 0);
    /* The same address in two namespaces is two entries. */
    struct cmt_live a = {.addr = 0x1000, .size = 1, .ns = CMT_NS_POINTER};
    struct cmt_live b = {.addr = 0x1000, .size = 2, .ns = CMT_NS_VMM_MAP};
    struct cmt_live out;
    cmt_live_set_free(&s);
    CHECK(cmt_live_set_init(&s) == 0);
    CHECK(cmt_live_set_put(&s, &a, NULL) == 0);
    CHECK(cmt_live_set_put(&s, &b, NULL) == 0);
    CHECK(cmt_live_set_take(&s, CMT_NS_VMM_MAP, 0x1000, &out) && out.size == 2);
    CHECK(cmt_live_set_take(&s, CMT_NS_POINTER, 0x1000, &out) && out.size == 1);
    CHECK(!cmt_live_set_take(&s, CMT_NS_POINTER, 0x1000, &out));
    cmt_live_set_free(&s);
    return 0;
}
