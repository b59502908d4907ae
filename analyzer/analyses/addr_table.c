/* SPDX-License-Identifier: MIT */
/* Live allocations by (namespace, address) (addr_table.h). */
#include "addr_table.h"

#include <stdlib.h>
#include <string.h>

#define FIRST_CAP 256

void cmt_addr_table_init(struct cmt_addr_table *t)
{
    memset(t, 0, sizeof *t);
}

void cmt_addr_table_free(struct cmt_addr_table *t)
{
    free(t->t);
    memset(t, 0, sizeof *t);
}

static int grow(struct cmt_addr_table *t)
{
    size_t cap = t->cap ? 2 * t->cap : FIRST_CAP, old_cap = t->cap;
    struct cmt_addr_entry *old = t->t, *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    t->t = n;
    t->cap = cap;
    t->shift = 64 - (unsigned)__builtin_ctzll(cap);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].addr)
            continue;
        size_t j = cmt_addr_table_home(t, old[i].ns, old[i].addr);
        while (n[j].addr)
            j = (j + 1) & (cap - 1);
        n[j] = old[i];
    }
    free(old);
    return 0;
}

struct cmt_addr_entry *cmt_addr_table_put_grow(struct cmt_addr_table *t, uint8_t ns, uint64_t addr, uint64_t size,
                                               int32_t device, uint8_t tag)
{
    if (grow(t) != 0)
        return NULL;
    return cmt_addr_table_put(t, ns, addr, size, device, tag);
}

void cmt_addr_table_erase(struct cmt_addr_table *t, struct cmt_addr_entry *e)
{
    size_t mask = t->cap - 1, hole = (size_t)(e - t->t);
    t->count--;
    for (size_t i = (hole + 1) & mask; t->t[i].addr; i = (i + 1) & mask) {
        /* the entry at i moves into the hole unless its home lies in
         * (hole, i] cyclically: the distance from home to i is then less
         * than the distance from hole to i */
        size_t home = cmt_addr_table_home(t, t->t[i].ns, t->t[i].addr);
        if (((i - home) & mask) < ((i - hole) & mask))
            continue;
        t->t[hole] = t->t[i];
        hole = i;
    }
    t->t[hole].addr = 0;
}
