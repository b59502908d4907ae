/* SPDX-License-Identifier: MIT */
#include "tensor_slots.h"

#include <stdlib.h>
#include <string.h>

#include "hash_seed.h"

void cmt_tensor_slots_init(struct cmt_tensor_slots *s)
{
    memset(s, 0, sizeof *s);
    s->mult = cmt_hash_multiplier();
}

void cmt_tensor_slots_free(struct cmt_tensor_slots *s)
{
    free(s->t);
    free(s->free_slots);
    memset(s, 0, sizeof *s);
}

static size_t home(const struct cmt_tensor_slots *s, int32_t device, uint64_t key)
{
    return (size_t)(((key ^ ((uint64_t)(uint32_t)device << 56)) * s->mult) >> s->shift);
}

static int rebuild(struct cmt_tensor_slots *s, size_t cap)
{
    struct cmt_tensor_slot_entry *t = calloc(cap, sizeof *t), *old = s->t;
    if (!t)
        return -1;
    size_t old_cap = s->cap;
    s->t = t;
    s->cap = cap;
    s->shift = 64 - cmt_log2_pow2(cap);
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].used)
            continue;
        size_t j = home(s, old[i].device, old[i].key);
        while (t[j].used)
            j = (j + 1) & (cap - 1);
        t[j] = old[i];
    }
    free(old);
    return 0;
}

static int new_slot(struct cmt_tensor_slots *s, uint32_t *slot)
{
    if (s->n_free) {
        *slot = s->free_slots[--s->n_free];
        return 0;
    }
    if (s->next_slot == UINT32_MAX)
        return -1;
    *slot = s->next_slot++;
    return 0;
}

int cmt_tensor_slots_add(struct cmt_tensor_slots *s, int32_t device, uint64_t key, uint32_t *slot)
{
    if ((s->n + 1) * 2 > s->cap && rebuild(s, s->cap ? 2 * s->cap : 1024) != 0)
        return -1;
    if (new_slot(s, slot) != 0)
        return -1;
    size_t j = home(s, device, key);
    while (s->t[j].used)
        j = (j + 1) & (s->cap - 1);
    s->t[j] = (struct cmt_tensor_slot_entry){key, device, *slot, true};
    s->n++;
    return 0;
}

static size_t find_at(const struct cmt_tensor_slots *s, int32_t device, uint64_t key)
{
    if (!s->cap)
        return SIZE_MAX;
    for (size_t j = home(s, device, key);; j = (j + 1) & (s->cap - 1)) {
        if (!s->t[j].used)
            return SIZE_MAX;
        if (s->t[j].key == key && s->t[j].device == device)
            return j;
    }
}

bool cmt_tensor_slots_find(const struct cmt_tensor_slots *s, int32_t device, uint64_t key, uint32_t *slot)
{
    size_t j = find_at(s, device, key);
    if (j == SIZE_MAX)
        return false;
    *slot = s->t[j].slot;
    return true;
}

int cmt_tensor_slots_remove(struct cmt_tensor_slots *s, int32_t device, uint64_t key)
{
    size_t hole = find_at(s, device, key);
    if (hole == SIZE_MAX)
        return 0;
    if (s->n_free == s->cap_free) {
        size_t cap = s->cap_free ? 2 * s->cap_free : 256;
        uint32_t *f = realloc(s->free_slots, cap * sizeof *f);
        if (!f)
            return -1;
        s->free_slots = f;
        s->cap_free = cap;
    }
    s->free_slots[s->n_free++] = s->t[hole].slot;
    size_t mask = s->cap - 1;
    s->t[hole].used = false;
    s->n--;
    for (size_t i = (hole + 1) & mask; s->t[i].used; i = (i + 1) & mask) {
        size_t h = home(s, s->t[i].device, s->t[i].key);
        bool stays = hole <= i ? (h > hole && h <= i) : (h > hole || h <= i);
        if (stays)
            continue;
        s->t[hole] = s->t[i];
        s->t[i].used = false;
        hole = i;
    }
    return 0;
}

int cmt_tensor_slots_spare(struct cmt_tensor_slots *s, uint32_t *slot)
{
    return new_slot(s, slot);
}
