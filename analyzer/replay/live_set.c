/* SPDX-License-Identifier: MIT */
#include "live_set.h"

#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"

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
    memset(s, 0, sizeof *s);
    s->cap = 1024;
    s->hash_mult = cmt_hash_multiplier();
    s->hash_shift = 64 - cmt_log2_pow2(s->cap);
    s->aux.hash_mult = cmt_hash_multiplier();
    s->tids.hash_mult = cmt_hash_multiplier();
    s->threads.hash_mult = cmt_hash_multiplier();
    s->slots = alloc_slots(s->cap);
    s->id_index = calloc(1, sizeof *s->id_index);
    if (!s->slots || !s->id_index) {
        cmt_live_set_free(s);
        return -1;
    }
    return 0;
}

void cmt_live_set_free(struct cmt_live_set *s)
{
    free(s->slots);
    free(s->by_id);
    if (s->id_index)
        free(s->id_index->ids);
    free(s->id_index);
    free(s->aux.keys);
    free(s->aux.tags);
    free(s->aux.values);
    free(s->tids.keys);
    free(s->tids.tags);
    free(s->tids.values);
    memset(s, 0, sizeof *s);
}

/* ---- the aux words of VMM entries ----------------------------------------------- */

static bool has_aux(uint8_t ns)
{
    return ns == CMT_NS_VMM_HANDLE || ns == CMT_NS_VMM_MAP;
}

static size_t aux_home(const struct cmt_live_aux_map *m, uint8_t ns, uint64_t addr)
{
    return cmt_live_set_hash(addr, ns, m->hash_mult, m->hash_shift);
}

static size_t aux_probe(const struct cmt_live_aux_map *m, uint8_t ns, uint64_t addr, bool *found)
{
    size_t mask = m->cap - 1;
    for (size_t i = aux_home(m, ns, addr);; i = (i + 1) & mask) {
        if (!m->tags[i]) {
            *found = false;
            return i;
        }
        if (m->keys[i] == addr && m->tags[i] == ns + 1) {
            *found = true;
            return i;
        }
    }
}

static int aux_reserve(struct cmt_live_aux_map *m)
{
    if (m->cap && (m->count + 1) * 2 <= m->cap)
        return 0;
    struct cmt_live_aux_map old = *m;
    size_t cap = old.cap ? old.cap * 2 : 64;
    m->keys = malloc(cap * sizeof *m->keys);
    m->tags = calloc(cap, 1);
    m->values = malloc(cap * sizeof *m->values);
    if (!m->keys || !m->tags || !m->values) {
        free(m->keys);
        free(m->tags);
        free(m->values);
        *m = old;
        return -1;
    }
    m->cap = cap;
    m->hash_shift = 64 - cmt_log2_pow2(cap);
    for (size_t i = 0; i < old.cap; i++) {
        if (!old.tags[i])
            continue;
        bool found;
        size_t j = aux_probe(m, (uint8_t)(old.tags[i] - 1), old.keys[i], &found);
        m->keys[j] = old.keys[i];
        m->tags[j] = old.tags[i];
        m->values[j] = old.values[i];
    }
    free(old.keys);
    free(old.tags);
    free(old.values);
    return 0;
}

static uint64_t aux_get(const struct cmt_live_aux_map *m, uint8_t ns, uint64_t addr)
{
    if (!m->cap)
        return 0;
    bool found;
    size_t i = aux_probe(m, ns, addr, &found);
    return found ? m->values[i] : 0;
}

static void aux_remove(struct cmt_live_aux_map *m, uint8_t ns, uint64_t addr)
{
    if (!m->cap)
        return;
    bool found;
    size_t i = aux_probe(m, ns, addr, &found);
    if (!found)
        return;
    size_t mask = m->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->tags[j])
            break;
        size_t home = aux_home(m, (uint8_t)(m->tags[j] - 1), m->keys[j]);
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            m->keys[hole] = m->keys[j];
            m->tags[hole] = m->tags[j];
            m->values[hole] = m->values[j];
            hole = j;
        }
    }
    m->tags[hole] = 0;
    m->count--;
}

/* ---- the allocating thread ------------------------------------------------------ */

_Static_assert(sizeof(((struct cmt_live_threads *)0)->keys) / sizeof(uint32_t) == 512, "a power of two");

/* The index of tid among the threads met, assigned on first sight;
 * CMT_LIVE_THREADS once CMT_LIVE_THREADS threads have one. */
static inline uint8_t thread_index(struct cmt_live_threads *t, uint32_t tid)
{
    if (__builtin_expect(t->has_last && t->last_tid == tid, 1))
        return t->last_index;
    size_t mask = sizeof t->keys / sizeof t->keys[0] - 1;
    size_t i = (size_t)(((uint64_t)tid * t->hash_mult) >> 55) & mask;
    while (t->index1[i] && t->keys[i] != tid)
        i = (i + 1) & mask;
    uint8_t index;
    if (t->index1[i]) {
        index = (uint8_t)(t->index1[i] - 1);
    } else if (t->n < CMT_LIVE_THREADS) {
        index = (uint8_t)t->n;
        t->tids[t->n++] = tid;
        t->keys[i] = tid;
        t->index1[i] = (uint8_t)(index + 1);
    } else {
        index = CMT_LIVE_THREADS; /* the table holds at most half: i is a free slot, left free */
    }
    t->last_tid = tid;
    t->last_index = index;
    t->has_last = true;
    return index;
}

static inline uint32_t slot_tid(const struct cmt_live_set *s, const struct cmt_live_slot *e)
{
    if (__builtin_expect(e->thread < CMT_LIVE_THREADS, 1))
        return s->threads.tids[e->thread];
    return (uint32_t)aux_get(&s->tids, (uint8_t)((e->tag & CMT_LIVE_TAG_NS_MASK) - 1), e->addr);
}

static inline void to_live(const struct cmt_live_set *s, const struct cmt_live_slot *e, struct cmt_live *out)
{
    cmt_live_slot_to_live(e, slot_tid(s, e), out);
}

static inline struct cmt_live_slot to_slot(const struct cmt_live *a, uint8_t thread)
{
    return (struct cmt_live_slot){
        .addr = a->addr,
        .size = a->size,
        .ts = a->ts,
        .stack = a->stack,
        .device = (int8_t)a->device,
        .tag = (uint8_t)((a->ns + 1) | (a->kind << 3)),
        .thread = thread,
        .api = a->api,
    };
}

/* Entry a, going in with thread index `thread`, where it or the entry it
 * replaces has no index: its tid goes into the side table (no index), or
 * the replaced entry's leaves it (an index now). Returns -1 when out of
 * memory. */
static int side_tid_update(struct cmt_live_set *s, const struct cmt_live *a, uint8_t thread)
{
    if (thread != CMT_LIVE_THREADS) {
        aux_remove(&s->tids, a->ns, a->addr);
        return 0;
    }
    if (aux_reserve(&s->tids) != 0)
        return -1;
    bool had;
    size_t k = aux_probe(&s->tids, a->ns, a->addr, &had);
    if (!had) {
        s->tids.keys[k] = a->addr;
        s->tids.tags[k] = (uint8_t)(a->ns + 1);
        s->tids.count++;
    }
    s->tids.values[k] = a->tid;
    return 0;
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
        if (e->addr == addr && (e->tag & CMT_LIVE_TAG_NS_MASK) == tag) {
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
    s->hash_shift = 64 - cmt_log2_pow2(s->cap);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].tag)
            continue;
        bool found;
        s->slots[probe(s, (uint8_t)((old[i].tag & CMT_LIVE_TAG_NS_MASK) - 1), old[i].addr, &found)] = old[i];
    }
    free(old);
    return 0;
}

int cmt_live_set_put(struct cmt_live_set *s, const struct cmt_live *a, struct cmt_live *replaced)
{
    /* At most half full: at three quarters, probe runs (and the backward
     * shifts of every release) cost about 20 more instructions per event
     * (callgrind, bench/gen_trace) and 15% more replay time, for half the
     * memory: 64 to 128 bytes per live allocation now. */
    if (__builtin_expect((s->table_count + 1) * 2 > s->cap, 0) && grow(s) != 0)
        return -1;
    bool found;
    size_t i = probe(s, a->ns, a->addr, &found);
    if (found && replaced)
        to_live(s, &s->slots[i], replaced);
    uint8_t thread = thread_index(&s->threads, a->tid);
    if (__builtin_expect(thread == CMT_LIVE_THREADS || (found && s->slots[i].thread == CMT_LIVE_THREADS), 0) &&
        side_tid_update(s, a, thread) != 0)
        return -1;
    if (__builtin_expect(has_aux(a->ns), 0)) {
        if (aux_reserve(&s->aux) != 0)
            return -1;
        bool had;
        size_t k = aux_probe(&s->aux, a->ns, a->addr, &had);
        if (found && replaced)
            replaced->aux = had ? s->aux.values[k] : 0;
        if (!had) {
            s->aux.keys[k] = a->addr;
            s->aux.tags[k] = (uint8_t)(a->ns + 1);
            s->aux.count++;
        }
        s->aux.values[k] = a->aux;
    }
    s->slots[i] = to_slot(a, thread);
    if (!found) {
        s->count++;
        s->table_count++;
    }
    return found ? 1 : 0;
}

/* ---- allocations paired by id ----------------------------------------------------- */

static int grow_by_id(struct cmt_live_set *s, uint32_t id)
{
    size_t cap = s->id_cap ? s->id_cap : 1024;
    while (cap <= id)
        cap *= 2;
    struct cmt_live_slot *slots = alloc_slots(cap);
    if (!slots)
        return -1;
    if (s->id_cap)
        memcpy(slots, s->by_id, s->id_cap * sizeof *slots);
    free(s->by_id);
    s->by_id = slots;
    s->id_cap = cap;
    return 0;
}

int cmt_live_set_put_id_slow(struct cmt_live_set *s, uint32_t id, const struct cmt_live *a, struct cmt_live *replaced)
{
    if (__builtin_expect(id >= s->id_cap, 0) && grow_by_id(s, id) != 0)
        return -1;
    struct cmt_live_slot *e = &s->by_id[id];
    bool found = e->tag != 0;
    if (found && replaced)
        to_live(s, e, replaced);
    uint8_t thread = thread_index(&s->threads, a->tid);
    /* the same key as the entry replaced (the pairing gives a live
     * address its id again): its side-table tid is this one's */
    if (__builtin_expect(thread == CMT_LIVE_THREADS || (found && e->thread == CMT_LIVE_THREADS), 0) &&
        side_tid_update(s, a, thread) != 0)
        return -1;
    *e = to_slot(a, thread);
    s->id_changes++;
    if (!found)
        s->count++;
    return found ? 1 : 0;
}

bool cmt_live_set_take_id_slow(struct cmt_live_set *s, uint32_t id, struct cmt_live *out)
{
    if (id >= s->id_cap || !s->by_id[id].tag)
        return false;
    struct cmt_live_slot *e = &s->by_id[id];
    if (out)
        to_live(s, e, out);
    if (__builtin_expect(e->thread == CMT_LIVE_THREADS, 0))
        aux_remove(&s->tids, (uint8_t)((e->tag & CMT_LIVE_TAG_NS_MASK) - 1), e->addr);
    e->tag = 0;
    s->id_changes++;
    s->count--;
    return true;
}

/* (Re)builds the index of the slots by id; false when out of memory. */
static bool id_index_build(const struct cmt_live_set *s)
{
    struct cmt_live_id_index *x = s->id_index;
    size_t n = 0;
    for (size_t i = 0; i < s->id_cap; i++)
        n += s->by_id[i].tag != 0;
    size_t cap = 64;
    while (cap < 2 * n)
        cap *= 2;
    if (cap != x->cap) {
        uint32_t *ids = malloc(cap * sizeof *ids);
        if (!ids)
            return false;
        free(x->ids);
        x->ids = ids;
        x->cap = cap;
    }
    memset(x->ids, 0, cap * sizeof *x->ids);
    unsigned shift = 64 - cmt_log2_pow2(cap);
    for (size_t id = 0; id < s->id_cap; id++) {
        const struct cmt_live_slot *e = &s->by_id[id];
        if (!e->tag)
            continue;
        size_t k = cmt_live_set_hash(e->addr, (uint8_t)((e->tag & CMT_LIVE_TAG_NS_MASK) - 1), s->hash_mult, shift);
        while (x->ids[k])
            k = (k + 1) & (cap - 1);
        x->ids[k] = (uint32_t)id + 1;
    }
    x->changes = s->id_changes;
    x->built = true;
    return true;
}

/* The slot by id holding (ns, addr), NULL when none. The index is the
 * set's own, rebuilt when stale: s is const to its callers. */
static const struct cmt_live_slot *find_by_id(const struct cmt_live_set *s, uint8_t ns, uint64_t addr)
{
    const struct cmt_live_id_index *x = s->id_index;
    if (!x->built || x->changes != s->id_changes) {
        if (!id_index_build(s)) {
            /* out of memory: a walk, as slow as the live set is large */
            for (size_t id = 0; id < s->id_cap; id++)
                if ((s->by_id[id].tag & CMT_LIVE_TAG_NS_MASK) == ns + 1u && s->by_id[id].addr == addr)
                    return &s->by_id[id];
            return NULL;
        }
    }
    unsigned shift = 64 - cmt_log2_pow2(x->cap);
    for (size_t k = cmt_live_set_hash(addr, ns, s->hash_mult, shift); x->ids[k]; k = (k + 1) & (x->cap - 1)) {
        const struct cmt_live_slot *e = &s->by_id[x->ids[k] - 1];
        if (e->addr == addr && (e->tag & CMT_LIVE_TAG_NS_MASK) == ns + 1u)
            return e;
    }
    return NULL;
}

bool cmt_live_set_find(const struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = probe(s, ns, addr, &found);
    if (!found) {
        const struct cmt_live_slot *e = s->id_cap && !has_aux(ns) ? find_by_id(s, ns, addr) : NULL;
        if (e && out)
            to_live(s, e, out);
        return e != NULL;
    }
    if (out) {
        to_live(s, &s->slots[i], out);
        if (has_aux(ns))
            out->aux = aux_get(&s->aux, ns, addr);
    }
    return found;
}

uint64_t *cmt_live_set_aux(struct cmt_live_set *s, uint8_t ns, uint64_t addr)
{
    if (!has_aux(ns) || !s->aux.cap)
        return NULL;
    bool found;
    size_t i = aux_probe(&s->aux, ns, addr, &found);
    return found ? &s->aux.values[i] : NULL;
}

bool cmt_live_set_at(const struct cmt_live_set *s, size_t i, struct cmt_live *out)
{
    if (i >= cmt_live_set_end(s))
        return false;
    const struct cmt_live_slot *e = cmt_live_set_slot(s, i);
    if (!e->tag)
        return false;
    to_live(s, e, out);
    if (has_aux(out->ns))
        out->aux = aux_get(&s->aux, out->ns, out->addr);
    return true;
}

bool cmt_live_set_take(struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out)
{
    bool found;
    size_t i = probe(s, ns, addr, &found);
    if (!found)
        return false;
    if (out)
        to_live(s, &s->slots[i], out);
    if (__builtin_expect(s->slots[i].thread == CMT_LIVE_THREADS, 0))
        aux_remove(&s->tids, ns, addr);
    if (__builtin_expect(has_aux(ns), 0)) {
        if (out)
            out->aux = aux_get(&s->aux, ns, addr);
        aux_remove(&s->aux, ns, addr);
    }
    /* Backward-shift deletion: pull later members of the probe run into the
     * hole so lookups never need tombstones. */
    size_t mask = s->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        const struct cmt_live_slot *e = &s->slots[j];
        if (!e->tag)
            break;
        size_t home = cmt_live_set_home(s, (uint8_t)((e->tag & CMT_LIVE_TAG_NS_MASK) - 1), e->addr);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            s->slots[hole] = *e;
            hole = j;
        }
    }
    s->slots[hole].tag = 0;
    s->count--;
    s->table_count--;
    return true;
}
