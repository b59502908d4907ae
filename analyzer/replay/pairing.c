/* SPDX-License-Identifier: MIT */
/* Allocation/release pairing on the reading thread (pairing.h). */
#include "pairing.h"

#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"

struct cmt_replay_pairing *cmt_replay_pairing_of(struct cmt_replay *r)
{
    if (r->pairing)
        return r->pairing;
    struct cmt_replay_pairing *p = aligned_alloc(_Alignof(struct cmt_replay_pairing), sizeof *p);
    if (!p)
        return NULL;
    *p = (struct cmt_replay_pairing){.cap = 1024, .hash_mult = cmt_hash_multiplier()};
    p->hash_shift = 64 - cmt_log2_pow2(p->cap);
    p->table = calloc(p->cap, sizeof *p->table);
    if (!p->table) {
        free(p);
        return NULL;
    }
    r->pairing = p;
    return p;
}

void cmt_replay_pairing_free(struct cmt_replay_pairing *p)
{
    if (!p)
        return;
    free(p->table);
    free(p->free_ids);
    free(p);
}

bool cmt_pairing_grow(struct cmt_replay_pairing *p)
{
    size_t cap = p->cap * 2;
    struct cmt_pair_entry *table = calloc(cap, sizeof *table);
    if (!table) {
        p->full = true;
        return false;
    }
    struct cmt_pair_entry *old = p->table;
    size_t old_cap = p->cap;
    p->table = table;
    p->cap = cap;
    p->hash_shift = 64 - cmt_log2_pow2(cap);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].tag)
            continue;
        bool found;
        p->table[cmt_pairing_probe(p, (uint8_t)(old[i].tag - 1), old[i].addr, &found)] = old[i];
    }
    free(old);
    return true;
}

bool cmt_pairing_new_id(struct cmt_replay_pairing *p, uint32_t *id)
{
    /* ids travel in a result (int32_t); the free list has room for each */
    if (p->next_id == INT32_MAX) {
        p->full = true;
        return false;
    }
    if (p->next_id == p->free_cap) {
        size_t cap = p->free_cap ? p->free_cap * 2 : 1024;
        uint32_t *ids = realloc(p->free_ids, cap * sizeof *ids);
        if (!ids) {
            p->full = true;
            return false;
        }
        p->free_ids = ids;
        p->free_cap = cap;
    }
    *id = p->next_id++;
    return true;
}
