/* SPDX-License-Identifier: MIT */
#include "live_set.h"

#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"

static inline size_t slot_of(const struct cmt_live_set *s, uint8_t ns, uint64_t addr)
{
    /* Device pointers share high bits and are 256-byte aligned: the top
     * bits of the product mix all of them. */
    return (size_t)(((addr ^ ((uint64_t)ns << 59)) * s->hash_mult) >> s->hash_shift);
}

int cmt_live_set_init(struct cmt_live_set *s)
{
    s->cap = 1024;
    s->count = 0;
    s->hash_mult = cmt_hash_multiplier();
    s->hash_shift = 64 - cmt_log2_pow2(s->cap);
    s->slots = calloc(s->cap, sizeof *s->slots);
    return s->slots ? 0 : -1;
}

void cmt_live_set_free(struct cmt_live_set *s)
{
    free(s->slots);
    memset(s, 0, sizeof *s);
}

static void place(struct cmt_live_set *s, const struct cmt_live *a)
{
    size_t i = slot_of(s, a->ns, a->addr);
    while (s->slots[i].used)
        i = (i + 1) & (s->cap - 1);
    s->slots[i] = *a;
    s->slots[i].used = 1;
}

static int grow(struct cmt_live_set *s)
{
    struct cmt_live *old = s->slots;
    size_t old_cap = s->cap;
    struct cmt_live *slots = calloc(old_cap * 2, sizeof *slots);
    if (!slots)
        return -1;
    s->slots = slots;
    s->cap = old_cap * 2;
    s->hash_shift = 64 - cmt_log2_pow2(s->cap);
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].used)
            place(s, &old[i]);
    free(old);
    return 0;
}

static size_t find_slot(const struct cmt_live_set *s, uint8_t ns, uint64_t addr, bool *found)
{
    size_t i = slot_of(s, ns, addr);
    for (;;) {
        const struct cmt_live *e = &s->slots[i];
        if (!e->used) {
            *found = false;
            return i;
        }
        if (e->addr == addr && e->ns == ns) {
            *found = true;
            return i;
        }
        i = (i + 1) & (s->cap - 1);
    }
}

int cmt_live_set_put(struct cmt_live_set *s, const struct cmt_live *a, struct cmt_live *replaced)
{
    if ((s->count + 1) * 4 > s->cap * 3 && grow(s) != 0)
        return -1;
    bool found;
    size_t i = find_slot(s, a->ns, a->addr, &found);
    if (found && replaced)
        *replaced = s->slots[i];
    s->slots[i] = *a;
    s->slots[i].used = 1;
    if (!found)
        s->count++;
    return found ? 1 : 0;
}

const struct cmt_live *cmt_live_set_find(const struct cmt_live_set *s, uint8_t ns, uint64_t addr)
{
    bool found;
    size_t i = find_slot(s, ns, addr, &found);
    return found ? &s->slots[i] : NULL;
}

bool cmt_live_set_take(struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = find_slot(s, ns, addr, &found);
    if (!found)
        return false;
    if (out)
        *out = s->slots[i];
    /* Backward-shift deletion: pull later members of the probe run into the
     * hole so lookups never need tombstones. */
    size_t mask = s->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->slots[j].used)
            break;
        size_t home = slot_of(s, s->slots[j].ns, s->slots[j].addr);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            s->slots[hole] = s->slots[j];
            hole = j;
        }
    }
    s->slots[hole].used = 0;
    s->count--;
    return true;
}
