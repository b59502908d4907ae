/* SPDX-License-Identifier: MIT */
/* The passes' table of live allocations (analyses/addr_table.h): every
 * insertion found again with its fields, every removal gone, the others
 * untouched, against a plain array kept beside it, through growth and
 * backward shifts over probe runs that wrap around the table's end. */
#include "addr_table.h"

#include "../test_util.h"

#define N 20000

struct ref {
    uint64_t addr, size;
    uint8_t ns, tag;
    int32_t device;
    int live, dup; /* dup: the key of an earlier one */
};

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void check_all(const struct cmt_addr_table *t, const struct ref *r, size_t n)
{
    size_t live = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cmt_addr_entry *e = cmt_addr_table_find(t, r[i].ns, r[i].addr);
        if (r[i].dup)
            continue;
        if (!r[i].live) {
            CHECK(e == NULL);
            continue;
        }
        live++;
        CHECK(e != NULL);
        CHECK_EQ_U64(e->addr, r[i].addr);
        CHECK_EQ_U64(e->size, r[i].size);
        CHECK_EQ_U64(e->ns, r[i].ns);
        CHECK_EQ_U64(e->tag, r[i].tag);
        CHECK_EQ_U64(e->device, r[i].device);
    }
    CHECK_EQ_U64(t->count, live);
}

int main(void)
{
    static struct ref r[N];
    struct cmt_addr_table t;
    cmt_addr_table_init(&t);
    CHECK(cmt_addr_table_find(&t, 0, 0x1000) == NULL);
    /* Addresses as allocators hand them out (aligned, clustered), the same
     * address in two namespaces, and a few far apart. */
    for (size_t i = 0; i < N; i++) {
        r[i].addr = i % 3 == 0 ? 0x7f0000000000ull + (i / 2) * 512 : (next() | 1) & 0xffffffffffffull;
        if (i % 7 == 1)
            r[i].addr = r[i - 1].addr; /* another namespace: a second key */
        r[i].ns = (uint8_t)(i % 7 == 1 ? r[i - 1].ns + 1 : 0);
        r[i].size = next() >> 20;
        r[i].tag = (uint8_t)(i % 5);
        r[i].device = (int32_t)(i % 70) - 1;
        /* a key met before (addresses may repeat) stays its first entry */
        if (cmt_addr_table_find(&t, r[i].ns, r[i].addr)) {
            r[i].dup = 1;
            continue;
        }
        CHECK(cmt_addr_table_put(&t, r[i].ns, r[i].addr, r[i].size, r[i].device, r[i].tag) != NULL);
        r[i].live = 1;
    }
    CHECK(t.cap >= 2 * t.count);
    check_all(&t, r, N);
    /* Remove two thirds in a scattered order, checking as we go. */
    for (size_t k = 0; k < N; k++) {
        size_t i = (k * 7919) % N;
        if (!r[i].live || r[i].dup || i % 3 == 2)
            continue;
        struct cmt_addr_entry *e = cmt_addr_table_find(&t, r[i].ns, r[i].addr);
        CHECK(e != NULL);
        cmt_addr_table_erase(&t, e);
        r[i].live = 0;
        if (k % 1000 == 0)
            check_all(&t, r, N);
    }
    check_all(&t, r, N);
    /* Put the removed back: the table reuses the freed slots. */
    size_t cap = t.cap;
    for (size_t i = 0; i < N; i++) {
        if (r[i].live || r[i].dup)
            continue;
        CHECK(cmt_addr_table_put(&t, r[i].ns, r[i].addr, r[i].size, r[i].device, r[i].tag) != NULL);
        r[i].live = 1;
    }
    CHECK_EQ_U64(t.cap, cap);
    check_all(&t, r, N);
    cmt_addr_table_free(&t);
    CHECK(cmt_addr_table_find(&t, 0, r[0].addr) == NULL);
    printf("ok\n");
    return 0;
}
