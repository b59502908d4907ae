/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_PAIRING_H
#define CUMEMTRACE_ANALYZER_PAIRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* Allocation/release pairing on the reading thread (feed.c): the replay's
 * hash-table work for the namespaces whose allocation and release are a
 * plain pair (CMT_NS_POINTER, CMT_NS_ARRAY, CMT_NS_VMM_RESERVE), moved off
 * the replay's thread, which bounds the analyzer's wall time (issue 30).
 * The reading thread keeps (namespace, address) -> slot id for the
 * allocations live in the replay's set by id, and marks each entry it
 * pairs (CMT_REPLAY_IN_PAIRED in kind, the id in result): the replay puts
 * and takes the slot by id, an array access. The ids are dense and reused
 * (the last freed first: its slot is still in the replay's cache), so they
 * stay below the most allocations live at once.
 *
 * An allocation at an address live already (its release went unrecorded)
 * gets the live one's id: the replay finds the slot taken, as it found the
 * key in its hash table, and counts the reuse the same way. A release the
 * map does not know goes unpaired, and the replay looks for it as before
 * (IPC imports, unmatched releases). VMM handles and mappings never pair:
 * their releases are no plain pair (cuMemRelease waits for the last unmap,
 * cuMemUnmap covers a span). Events the replay would count as bad (an
 * unknown API or kind, a device out of range) and failed calls never pair:
 * the map holds exactly what the replay's slots by id hold.
 *
 * Kept with the replay (struct cmt_replay's pairing), which it mirrors;
 * written by the reading thread only, while a feed runs. */

struct cmt_pair_entry {
    uint64_t addr;
    uint32_t id;
    uint8_t tag; /* 0: empty; else namespace + 1 */
};

struct cmt_replay_pairing {
    struct cmt_pair_entry *table; /* open addressing, at most half full */
    size_t cap, count;
    uint64_t hash_mult; /* random odd: hash_seed.h */
    unsigned hash_shift;
    uint32_t *free_ids; /* room for every id given: pushing never fails */
    size_t n_free, free_cap;
    uint32_t next_id;
    /* Out of memory once: no new pairs from then on (allocations go to the
     * replay's hash table, unpaired, as do their releases: the map does not
     * know them); those paired already still pair. */
    bool full;
} __attribute__((aligned(64)));

#define CMT_PAIRED_NAMESPACES (1u << CMT_NS_POINTER | 1u << CMT_NS_ARRAY | 1u << CMT_NS_VMM_RESERVE)

/* The replay's tables (replay.c), set by cmt_replay_init. */
extern uint8_t cmt_replay_namespace_of_api[256];
extern bool cmt_replay_api_known[256];
/* The namespace an allocation pairs in, by kind (unknown kinds and those
 * that do not pair: CMT_NS_COUNT); a release's, by api (unknown apis,
 * cuMemRelease, cuMemUnmap and those that do not pair: CMT_NS_COUNT). */
extern uint8_t cmt_pairing_alloc_ns[256];
extern uint8_t cmt_pairing_free_ns[256];

/* The pairing of r, made on first use; NULL when out of memory. */
struct cmt_replay_pairing *cmt_replay_pairing_of(struct cmt_replay *r);
void cmt_replay_pairing_free(struct cmt_replay_pairing *p);

/* Slow paths (pairing.c): an id for a new entry, false when out of memory. */
bool cmt_pairing_grow(struct cmt_replay_pairing *p);
bool cmt_pairing_new_id(struct cmt_replay_pairing *p, uint32_t *id);

static inline size_t cmt_pairing_home(const struct cmt_replay_pairing *p, uint8_t ns, uint64_t addr)
{
    return cmt_live_set_hash(addr, ns, p->hash_mult, p->hash_shift);
}

/* The slot holding (ns, addr) (*found), or the empty one that ends its
 * probe run, from its home slot. */
static inline size_t cmt_pairing_probe_from(const struct cmt_replay_pairing *p, size_t home, uint8_t ns,
                                            uint64_t addr, bool *found)
{
    size_t mask = p->cap - 1;
    uint8_t tag = (uint8_t)(ns + 1);
    for (size_t i = home;; i = (i + 1) & mask) {
        const struct cmt_pair_entry *e = &p->table[i];
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

static inline size_t cmt_pairing_probe(const struct cmt_replay_pairing *p, uint8_t ns, uint64_t addr, bool *found)
{
    return cmt_pairing_probe_from(p, cmt_pairing_home(p, ns, addr), ns, addr, found);
}

/* Backward-shift deletion of slot i, as the live set's. */
static inline void cmt_pairing_remove(struct cmt_replay_pairing *p, size_t i)
{
    size_t mask = p->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        const struct cmt_pair_entry *e = &p->table[j];
        if (!e->tag)
            break;
        size_t home = cmt_pairing_home(p, (uint8_t)(e->tag - 1), e->addr);
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            p->table[hole] = *e;
            hole = j;
        }
    }
    p->table[hole].tag = 0;
    p->count--;
}

/* The namespace the packed entry o pairs in (see above); CMT_NS_COUNT when
 * it does not pair. */
static inline uint8_t cmt_pairing_namespace(const struct cmt_replay_in *o)
{
    /* what the replay applies to its live set: an allocation or a release,
     * a successful call, known api and kind, a device in range (replay_one's
     * test), an allocation at an address (a zero-byte one has none) */
    if (o->result != 0 || o->device < -1)
        return CMT_NS_COUNT;
    if (o->type == CMT_REC_ALLOC)
        return cmt_replay_api_known[o->api] && o->addr ? cmt_pairing_alloc_ns[o->kind] : CMT_NS_COUNT;
    if (o->type == CMT_REC_FREE)
        return o->kind < CMT_KIND_COUNT ? cmt_pairing_free_ns[o->api] : CMT_NS_COUNT;
    return CMT_NS_COUNT;
}

/* Pairs o, which pairs in namespace ns (cmt_pairing_namespace) and whose
 * probe starts at home. */
static inline void cmt_pairing_pair(struct cmt_replay_pairing *p, struct cmt_replay_in *o, uint8_t ns, size_t home)
{
    bool alloc = o->type == CMT_REC_ALLOC;
    bool found;
    size_t i = cmt_pairing_probe_from(p, home, ns, o->addr, &found);
    uint32_t id;
    if (found) {
        id = p->table[i].id;
        if (!alloc) {
            cmt_pairing_remove(p, i);
            p->free_ids[p->n_free++] = id;
        }
    } else {
        if (!alloc || p->full)
            return;
        if (__builtin_expect((p->count + 1) * 4 > p->cap, 0)) {
            if (!cmt_pairing_grow(p))
                return;
            i = cmt_pairing_probe(p, ns, o->addr, &found);
        }
        if (p->n_free)
            id = p->free_ids[--p->n_free];
        else if (!cmt_pairing_new_id(p, &id))
            return;
        p->table[i] = (struct cmt_pair_entry){.addr = o->addr, .id = id, .tag = (uint8_t)(ns + 1)};
        p->count++;
    }
    o->kind |= CMT_REPLAY_IN_PAIRED;
    o->result = (int32_t)id;
}

/* Pairs the n packed entries of ev that pair, in order (records and their
 * second entries are left as they are). Their table slots are prefetched
 * first: one probe after another, each waited for its slot (perf: a fifth
 * of the reading thread's time on the load of the slot's tag). */
static inline void cmt_pairing_pair_all(struct cmt_replay_pairing *p, struct cmt_replay_in *ev, size_t n,
                                        uint8_t *ns, size_t *home)
{
    size_t cap = p->cap;
    for (size_t k = 0; k < n; k++) {
        ns[k] = cmt_pairing_namespace(&ev[k]);
        if (ns[k] != CMT_NS_COUNT) {
            home[k] = cmt_pairing_home(p, ns[k], ev[k].addr);
            __builtin_prefetch(&p->table[home[k]]);
        }
    }
    for (size_t k = 0; k < n; k++) {
        if (ns[k] == CMT_NS_COUNT)
            continue;
        if (__builtin_expect(p->cap != cap, 0)) /* grown since */
            home[k] = cmt_pairing_home(p, ns[k], ev[k].addr);
        cmt_pairing_pair(p, &ev[k], ns[k], home[k]);
    }
}

#endif
