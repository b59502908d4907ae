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

/* The pairing of r, made on first use; NULL when out of memory. */
struct cmt_replay_pairing *cmt_replay_pairing_of(struct cmt_replay *r);
void cmt_replay_pairing_free(struct cmt_replay_pairing *p);

/* Slow paths (pairing.c): an id for a new entry, false when out of memory. */
bool cmt_pairing_grow(struct cmt_replay_pairing *p);
bool cmt_pairing_new_id(struct cmt_replay_pairing *p, uint32_t *id);

static inline size_t cmt_pairing_probe(const struct cmt_replay_pairing *p, uint8_t ns, uint64_t addr, bool *found)
{
    size_t mask = p->cap - 1;
    uint8_t tag = (uint8_t)(ns + 1);
    for (size_t i = cmt_live_set_hash(addr, ns, p->hash_mult, p->hash_shift);; i = (i + 1) & mask) {
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

/* Backward-shift deletion of slot i, as the live set's. */
static inline void cmt_pairing_remove(struct cmt_replay_pairing *p, size_t i)
{
    size_t mask = p->cap - 1, hole = i, j = i;
    for (;;) {
        j = (j + 1) & mask;
        const struct cmt_pair_entry *e = &p->table[j];
        if (!e->tag)
            break;
        size_t home = cmt_live_set_hash(e->addr, (uint8_t)(e->tag - 1), p->hash_mult, p->hash_shift);
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            p->table[hole] = *e;
            hole = j;
        }
    }
    p->table[hole].tag = 0;
    p->count--;
}

/* Pairs the packed allocation or release o where it can (see above). */
static inline void cmt_pairing_pair(struct cmt_replay_pairing *p, struct cmt_replay_in *o)
{
    /* what the replay applies to its live set: a successful call, known
     * api and kind, a device in range (replay_one's test) */
    if (o->result != 0 || !cmt_replay_api_known[o->api] || o->kind >= CMT_KIND_COUNT || o->device < -1)
        return;
    uint8_t ns;
    bool alloc = o->type == CMT_REC_ALLOC;
    if (alloc) {
        if (!o->addr)
            return; /* a zero-byte allocation: nothing live */
        ns = (uint8_t)cmt_namespace_of_kind(o->kind);
    } else {
        if (o->api == CMT_API_CU_MEM_RELEASE || o->api == CMT_API_CU_MEM_UNMAP)
            return;
        ns = cmt_replay_namespace_of_api[o->api];
    }
    if (!(CMT_PAIRED_NAMESPACES >> ns & 1))
        return;
    bool found;
    size_t i = cmt_pairing_probe(p, ns, o->addr, &found);
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
        if (__builtin_expect((p->count + 1) * 2 > p->cap, 0)) {
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

#endif
