/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_LIVE_SET_H
#define CUMEMTRACE_ANALYZER_LIVE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Allocations live at the current instant of the replay, keyed by
 * (namespace, address). Open addressing with linear probing and
 * backward-shift deletion: no tombstones, so a long run of alloc/free churn
 * never degrades lookups.
 *
 * The table is probed for every event: an entry is 32 bytes and the table
 * is aligned, so a lookup that finds its key in the home slot (most do)
 * touches one cache line. The aux word of VMM handles and mappings lives in
 * a small table of its own. Both tables hash with a random multiplier
 * (hash_seed.h), so nothing outside depends on their order: whoever lists
 * entries sorts them.
 *
 * Each entry also keeps the thread that allocated it, so that whoever takes
 * it out (the release, on whatever thread) knows it without a table of its
 * own: a slot holds the index of the thread among the first
 * CMT_LIVE_THREADS the set met (one byte, room made by keeping namespace
 * and kind in one); the allocations of later threads keep their thread id
 * in a side table like the aux words.
 *
 * Allocations the reading thread paired with their releases (pairing.h)
 * are not in the table: they lie in slots by id, the id the pairing gave
 * them. Whoever reads the whole set reads both (cmt_live_set_end). */

enum cmt_namespace {
    CMT_NS_POINTER = 0, /* device, managed, pinned host, pool: one unified address space */
    CMT_NS_VMM_HANDLE = 1,
    CMT_NS_VMM_RESERVE = 2,
    CMT_NS_VMM_MAP = 3,
    CMT_NS_ARRAY = 4,
    CMT_NS_COUNT
};

/* One live allocation, as the set hands it out and takes it in. */
struct cmt_live {
    uint64_t addr;
    uint64_t size;
    uint64_t ts;
    uint32_t stack;
    int32_t device; /* -1 .. 127 */
    uint8_t ns;
    uint8_t kind;
    uint8_t api;
    uint8_t used; /* set in what the set hands out */
    uint32_t tid; /* the thread that allocated it */
    /* Kept for VMM handles and mappings only (other namespaces read 0). */
    union {
        uint64_t aux; /* VMM mapping: the physical handle it maps */
        struct {
            uint32_t map_refs; /* live mappings of this handle */
            uint32_t released; /* cuMemRelease seen: the memory goes with the last mapping */
        } vmm;                 /* VMM physical handle */
    };
};

/* A slot as stored. */
struct cmt_live_slot {
    uint64_t addr;
    uint64_t size;
    uint64_t ts;
    uint32_t stack;
    int8_t device;
    uint8_t tag;    /* 0: empty; else namespace + 1 (bits 0-2) and kind (bits 3-7, kinds < 32) */
    uint8_t thread; /* index into the set's threads; CMT_LIVE_THREADS: the tid is in the side table */
    uint8_t api;
};

#define CMT_LIVE_TAG_NS_MASK 7u
#define CMT_LIVE_THREADS 255 /* threads known by index; the slot's byte holds 0..255 */

/* For readers of the slots themselves (holes.c): 0 empty, else namespace + 1. */
static inline unsigned cmt_live_slot_tag(const struct cmt_live_slot *e)
{
    return e->tag & CMT_LIVE_TAG_NS_MASK;
}

static inline unsigned cmt_live_slot_kind(const struct cmt_live_slot *e)
{
    return e->tag >> 3;
}

/* The aux values of VMM entries, apart: they are few, and the main table's
 * slots stay at 32 bytes. */
struct cmt_live_aux_map {
    uint64_t *keys; /* address; 0 with tag 0: empty */
    uint8_t *tags;  /* namespace + 1 */
    uint64_t *values;
    size_t cap, count;
    uint64_t hash_mult; /* random odd: hash_seed.h */
    unsigned hash_shift;
};

/* The threads met, by index, and the way from a tid to its index. */
struct cmt_live_threads {
    uint32_t tids[CMT_LIVE_THREADS];
    size_t n;
    uint32_t keys[2 * CMT_LIVE_THREADS + 2]; /* open addressing by tid, 512 slots */
    uint8_t index1[2 * CMT_LIVE_THREADS + 2]; /* index + 1; 0: empty */
    uint64_t hash_mult;                       /* random odd: hash_seed.h */
    uint32_t last_tid;                        /* the last thread looked up */
    uint8_t last_index;
    bool has_last;
};

/* Where (ns, addr) of the allocations paired by id lies: built when
 * cmt_live_set_find asks for a paired namespace, and again after a change
 * (rare: IPC exports mid-replay, the forensics once at the end). */
struct cmt_live_id_index {
    uint32_t *ids; /* id + 1; 0: empty */
    size_t cap;    /* power of two, at least twice the entries */
    uint64_t changes; /* the set's id_changes when built */
    bool built;
};

struct cmt_live_set {
    struct cmt_live_slot *slots;
    size_t cap; /* power of two */
    size_t count; /* live entries: the table's and by_id's */
    size_t table_count; /* in slots */
    /* Allocations paired on the reading thread (feed.c: CMT_NS_POINTER,
     * CMT_NS_ARRAY, CMT_NS_VMM_RESERVE): the slot is the id the pairing
     * gave, so putting and taking one is an array write and read, no
     * probing; the ids stay below the most allocations live at once. */
    struct cmt_live_slot *by_id;
    size_t id_cap;
    uint64_t id_changes; /* puts and takes by id: the index below is stale */
    struct cmt_live_id_index *id_index;
    /* Multiply-shift hashing with a random odd multiplier (hash_seed.h): the
     * addresses a trace holds cannot be crafted to share one probe run. */
    uint64_t hash_mult;
    unsigned hash_shift; /* 64 - log2(cap) */
    struct cmt_live_aux_map aux;
    struct cmt_live_threads threads;
    struct cmt_live_aux_map tids; /* (ns, addr) -> tid of entries whose thread has no index */
};

int cmt_live_set_init(struct cmt_live_set *s);
void cmt_live_set_free(struct cmt_live_set *s);

/* Inserts a copy of a. If the key is live already, the old entry is copied
 * to *replaced, overwritten, and 1 is returned; 0 when new; -1 when out of
 * memory. */
int cmt_live_set_put(struct cmt_live_set *s, const struct cmt_live *a, struct cmt_live *replaced);

/* Removes the entry with this key into *out; returns false when absent. */
bool cmt_live_set_take(struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out);

/* Copies the entry with this key into *out; returns false when absent. */
bool cmt_live_set_find(const struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out);

/* The aux word of a live VMM handle or mapping, to update in place; NULL
 * when the entry is not live (or not of a VMM namespace). */
uint64_t *cmt_live_set_aux(struct cmt_live_set *s, uint8_t ns, uint64_t addr);

/* The general paths of the two below (live_set.c). */
int cmt_live_set_put_id_slow(struct cmt_live_set *s, uint32_t id, const struct cmt_live *a, struct cmt_live *replaced);
bool cmt_live_set_take_id_slow(struct cmt_live_set *s, uint32_t id, struct cmt_live *out);

/* Puts a copy of a at slot id (an id the reading thread's pairing gave:
 * pairing.h); as cmt_live_set_put otherwise (1: the slot held the entry of
 * the same key, copied to *replaced). Inline, as the next: once per event,
 * a call cost more than an array write (callgrind). */
static inline int cmt_live_set_put_id(struct cmt_live_set *s, uint32_t id, const struct cmt_live *a,
                                      struct cmt_live *replaced)
{
    const struct cmt_live_threads *t = &s->threads;
    /* a free slot, and the thread of the last allocation, known by index */
    if (__builtin_expect(id >= s->id_cap || s->by_id[id].tag || !t->has_last || t->last_tid != a->tid ||
                             t->last_index == CMT_LIVE_THREADS,
                         0))
        return cmt_live_set_put_id_slow(s, id, a, replaced);
    s->by_id[id] = (struct cmt_live_slot){
        .addr = a->addr,
        .size = a->size,
        .ts = a->ts,
        .stack = a->stack,
        .device = (int8_t)a->device,
        .tag = (uint8_t)((a->ns + 1) | (a->kind << 3)),
        .thread = t->last_index,
        .api = a->api,
    };
    s->id_changes++;
    s->count++;
    return 0;
}

/* Removes the entry at slot id into *out; false when the slot is empty. */
/* A slot as the set hands it out, its thread's id given (the index table's
 * or the side table's). */
static inline void cmt_live_slot_to_live(const struct cmt_live_slot *e, uint32_t tid, struct cmt_live *out)
{
    *out = (struct cmt_live){
        .addr = e->addr,
        .size = e->size,
        .ts = e->ts,
        .stack = e->stack,
        .device = e->device,
        .ns = (uint8_t)((e->tag & CMT_LIVE_TAG_NS_MASK) - 1),
        .kind = (uint8_t)(e->tag >> 3),
        .api = e->api,
        .used = 1,
        .tid = tid,
    };
}

static inline bool cmt_live_set_take_id(struct cmt_live_set *s, uint32_t id, struct cmt_live *out)
{
    if (__builtin_expect(id >= s->id_cap, 0))
        return false;
    struct cmt_live_slot *e = &s->by_id[id];
    if (__builtin_expect(!e->tag || e->thread == CMT_LIVE_THREADS, 0))
        return cmt_live_set_take_id_slow(s, id, out);
    cmt_live_slot_to_live(e, s->threads.tids[e->thread], out);
    e->tag = 0;
    s->id_changes++;
    s->count--;
    return true;
}

/* The end of iteration: the table's slots, then the slots by id. */
static inline size_t cmt_live_set_end(const struct cmt_live_set *s)
{
    return s->cap + s->id_cap;
}

/* Iteration: for (size_t i = 0; i < cmt_live_set_end(s); i++) if (cmt_live_set_at(s, i, &l)) ... */
bool cmt_live_set_at(const struct cmt_live_set *s, size_t i, struct cmt_live *out);

/* The slot of iteration index i (below cmt_live_set_end), for readers of
 * the slots themselves (holes.c). */
static inline const struct cmt_live_slot *cmt_live_set_slot(const struct cmt_live_set *s, size_t i)
{
    return i < s->cap ? &s->slots[i] : &s->by_id[i - s->cap];
}

/* Slot of (ns, addr) in a table of 2^(64 - shift) slots. Multiply-shift
 * alone (the top bits of key * mult) is universal, but linear probing needs
 * more than that: on bench/gen_trace's addresses some multipliers piled
 * keys into long runs, and the same trace took twice the instructions to
 * replay depending on the seed (callgrind, 4 million events: 1,250
 * instructions of probing per event instead of about 100). Folding the
 * high half of the product down and multiplying again (the second round of
 * splitmix64's finalizer) spreads every input bit over the slot bits; the
 * random multiplier still keeps crafted addresses from sharing a probe run. */
static inline size_t cmt_live_set_hash(uint64_t addr, uint8_t ns, uint64_t mult, unsigned shift)
{
    uint64_t x = (addr ^ ((uint64_t)ns << 59)) * mult;
    x ^= x >> 29;
    return (size_t)((x * 0xbf58476d1ce4e5b9ull) >> shift);
}

/* Where the probe for (ns, addr) starts. */
static inline size_t cmt_live_set_home(const struct cmt_live_set *s, uint8_t ns, uint64_t addr)
{
    return cmt_live_set_hash(addr, ns, s->hash_mult, s->hash_shift);
}

#endif
