/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_LIVE_SET_H
#define CUMEMTRACE_ANALYZER_LIVE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Allocations live at the current instant of the replay, keyed by
 * (namespace, address). Open addressing with linear probing and
 * backward-shift deletion: no tombstones, so a long run of alloc/free churn
 * never degrades lookups. */

enum cmt_namespace {
    CMT_NS_POINTER = 0, /* device, managed, pinned host, pool: one unified address space */
    CMT_NS_VMM_HANDLE = 1,
    CMT_NS_VMM_RESERVE = 2,
    CMT_NS_VMM_MAP = 3,
    CMT_NS_ARRAY = 4,
    CMT_NS_COUNT
};

struct cmt_live {
    uint64_t addr;
    uint64_t size;
    uint64_t ts;
    uint32_t stack;
    int32_t device;
    uint8_t ns;
    uint8_t kind;
    uint8_t api;
    uint8_t used;
    uint32_t tid;
    uint64_t aux; /* VMM map: the physical handle; pitch: requested bytes */
};

struct cmt_live_set {
    struct cmt_live *slots;
    size_t cap; /* power of two */
    size_t count;
    uint64_t hash_mult; /* random odd: hash_seed.h */
    unsigned hash_shift;
};

int cmt_live_set_init(struct cmt_live_set *s);
void cmt_live_set_free(struct cmt_live_set *s);

/* Inserts a copy of a (a->used is set). If the key is live already, the old
 * entry is copied to *replaced, overwritten, and 1 is returned; 0 when new;
 * -1 when out of memory. */
int cmt_live_set_put(struct cmt_live_set *s, const struct cmt_live *a, struct cmt_live *replaced);

/* Removes the entry with this key into *out; returns false when absent. */
bool cmt_live_set_take(struct cmt_live_set *s, uint8_t ns, uint64_t addr, struct cmt_live *out);

const struct cmt_live *cmt_live_set_find(const struct cmt_live_set *s, uint8_t ns, uint64_t addr);

/* Iteration: for (size_t i = 0; i < s->cap; i++) if (s->slots[i].used) ... */

#endif
