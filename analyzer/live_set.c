/* SPDX-License-Identifier: MIT */
#include "live_set.h"

#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(struct cmt_live_slot) == 32, "two slots per cache line");

static struct cmt_live_slot *alloc_slots(size_t cap)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, cap * sizeof(struct cmt_live_slot)) != 0)
        return NULL;
    memset(p, 0, cap * sizeof(struct cmt_live_slot));
    return p;
}

int cmt_live_set_init(struct cmt_live_set *s)
{
    s->cap = 1024;
    s->count = 0;
    s->slots = alloc_slots(s->cap);
    return s->slots ? 0 : -1;
}

void cmt_live_set_free(struct cmt_live_set *s)
{
    free(s->slots);
    memset(s, 0, sizeof *s);
}

static inline void to_live(const struct cmt_live_slot *e, struct cmt_live *out)
{
    *out = (struct cmt_live){
        .addr = e->addr,
        .size = e->size,
        .ts = e->ts,
        .stack = e->stack,
        .device = e->device,
        .ns = (uint8_t)(e->tag - 1),
        .kind = e->kind,
        .api = e->api,
        .used = 1,
    };
}

static inline struct cmt_live_slot to_slot(const struct cmt_live *a)
{
    return (struct cmt_live_slot){
        .addr = a->addr,
        .size = a->size,
        .ts = a->ts,
        .stack = a->stack,
        .device = (int8_t)a->device,
        .tag = (uint8_t)(a->ns + 1),
        .kind = a->kind,
        .api = a->api,
    };
}

/* Probes from the home slot of (ns, addr): returns the slot holding it
 * (*found) or the empty slot that ends its probe run. */
static inline __attribute__((always_inline)) size_t probe(const struct cmt_live_set *s, uint8_t ns, uint64_t addr,
                                                          bool *found)
{
    size_t mask = s->cap - 1;
    uint8_t tag = (uint8_t)(ns + 1);
    for (size_t i = cmt_live_set_home(s, ns, addr);; i = (i + 1) & mask) {
        const struct cmt_live_slot *e = &s->slots[i];
        if (!e->tag) {
            *found = false;
            return i;
        }
        if (e->addr == addr && e->tag == tag) {
            *found = true;
            return i;
        }
    }
}

static int grow(struct cmt_live_set *s)
{
    struct cmt_live_slot *old = s->slots;
    size_t old_cap = s->cap;
    struct cmt_live_slot *slots = alloc_slots(old_cap * 2);
    if (!slots)
        return -1;
    s->slots = slots;
    s->cap = old_cap * 2;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].tag)
            continue;
        bool found;
        s->slots[probe(s, (uint8_t)(old[i].tag - 1), old[i].addr, &found)] = old[i];
    }
    free(old);
    return 0;
}

int cmt_live_set_put(struct cmt_live_set *s, const struct cmt_live *a, struct cmt_live *replaced)
{
    if (__builtin_expect((s->count + 1) * 4 > s->cap * 3, 0) && grow(s) != 0)
        return -1;
    bool found;
    size_t i = probe(s, a->ns, a->addr, &found);
    if (found && replaced)
        to_live(&s->slots[i], replaced);
    s->slots[i] = to_slot(a);
    if (!found)
        s->count++;
    return found ? 1 : 0;
}

bool cmt_live_set_find(const struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = probe(s, ns, addr, &found);
    if (found && out)
        to_live(&s->slots[i], out);
    return found;
}

bool cmt_live_set_at(const struct cmt_live_set *s, size_t i, struct cmt_live *out)
{
    if (i >= s->cap || !s->slots[i].tag)
        return false;
    to_live(&s->slots[i], out);
    return true;
}

bool cmt_live_set_take(struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = probe(s, ns, addr, &found);
    if (!found)
        return false;
    if (out)
        to_live(&s->slots[i], out);
    /* Backward-shift deletion: pull later members of the probe run into the
     * hole so lookups never need tombstones. */
    size_t mask = s->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        const struct cmt_live_slot *e = &s->slots[j];
        if (!e->tag)
            break;
        size_t home = cmt_live_set_home(s, (uint8_t)(e->tag - 1), e->addr);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            s->slots[hole] = *e;
            hole = j;
        }
    }
    s->slots[hole].tag = 0;
    s->count--;
    return true;
}
