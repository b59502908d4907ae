/* SPDX-License-Identifier: MIT */
#include "live_set.h"

#include <stdlib.h>
#include <string.h>

static int alloc_arrays(struct cmt_live_set *s, size_t cap)
{
    s->tags = calloc(cap, 1);
    s->addrs = malloc(cap * sizeof *s->addrs);
    s->values = malloc(cap * sizeof *s->values);
    if (!s->tags || !s->addrs || !s->values) {
        free(s->tags);
        free(s->addrs);
        free(s->values);
        return -1;
    }
    s->cap = cap;
    return 0;
}

int cmt_live_set_init(struct cmt_live_set *s)
{
    s->count = 0;
    return alloc_arrays(s, 1024);
}

void cmt_live_set_free(struct cmt_live_set *s)
{
    free(s->tags);
    free(s->addrs);
    free(s->values);
    memset(s, 0, sizeof *s);
}

static inline void to_live(const struct cmt_live_set *s, size_t i, struct cmt_live *out)
{
    const struct cmt_live_value *v = &s->values[i];
    *out = (struct cmt_live){
        .addr = s->addrs[i],
        .size = v->size,
        .ts = v->ts,
        .stack = v->stack,
        .tid = v->tid,
        .device = v->device,
        .ns = (uint8_t)(s->tags[i] - 1),
        .kind = v->kind,
        .api = v->api,
        .used = 1,
    };
}

static inline void store(struct cmt_live_set *s, size_t i, const struct cmt_live *a)
{
    s->tags[i] = (uint8_t)(a->ns + 1);
    s->addrs[i] = a->addr;
    s->values[i] = (struct cmt_live_value){
        .size = a->size,
        .ts = a->ts,
        .stack = a->stack,
        .tid = a->tid,
        .device = a->device,
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
        uint8_t t = s->tags[i];
        if (!t) {
            *found = false;
            return i;
        }
        if (s->addrs[i] == addr && t == tag) {
            *found = true;
            return i;
        }
    }
}

static int grow(struct cmt_live_set *s)
{
    struct cmt_live_set old = *s;
    if (alloc_arrays(s, old.cap * 2) != 0) {
        *s = old;
        return -1;
    }
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.tags[i])
            continue;
        bool found;
        size_t j = probe(s, (uint8_t)(old.tags[i] - 1), old.addrs[i], &found);
        s->tags[j] = old.tags[i];
        s->addrs[j] = old.addrs[i];
        s->values[j] = old.values[i];
    }
    free(old.tags);
    free(old.addrs);
    free(old.values);
    return 0;
}

int cmt_live_set_put(struct cmt_live_set *s, const struct cmt_live *a, struct cmt_live *replaced)
{
    if (__builtin_expect((s->count + 1) * 4 > s->cap * 3, 0) && grow(s) != 0)
        return -1;
    bool found;
    size_t i = probe(s, a->ns, a->addr, &found);
    if (found && replaced)
        to_live(s, i, replaced);
    store(s, i, a);
    if (!found)
        s->count++;
    return found ? 1 : 0;
}

bool cmt_live_set_find(const struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = probe(s, ns, addr, &found);
    if (found && out)
        to_live(s, i, out);
    return found;
}

bool cmt_live_set_at(const struct cmt_live_set *s, size_t i, struct cmt_live *out)
{
    if (i >= s->cap || !s->tags[i])
        return false;
    to_live(s, i, out);
    return true;
}

bool cmt_live_set_take(struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = probe(s, ns, addr, &found);
    if (!found)
        return false;
    if (out)
        to_live(s, i, out);
    /* Backward-shift deletion: pull later members of the probe run into the
     * hole so lookups never need tombstones. */
    size_t mask = s->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!s->tags[j])
            break;
        size_t home = cmt_live_set_home(s, (uint8_t)(s->tags[j] - 1), s->addrs[j]);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            s->tags[hole] = s->tags[j];
            s->addrs[hole] = s->addrs[j];
            s->values[hole] = s->values[j];
            hole = j;
        }
    }
    s->tags[hole] = 0;
    s->count--;
    return true;
}
