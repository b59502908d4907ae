/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_ADDR_TABLE_H
#define CUMEMTRACE_ANALYZER_ADDR_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Live allocations by (namespace, address), for the passes that follow the
 * events as they are read and keep a table of their own (holder_pass.c,
 * uncached_pass.c, tensor_pass.c): one allocation's size, device and a byte
 * the pass gives it (its holder, whether it is a tensor, its category).
 *
 * Open addressing with linear probing, at most half full, removal by
 * backward shift (no tombstones, so a table that churns keeps short probe
 * runs); 24 bytes a slot, the address 0 marking an empty one. Fibonacci
 * hashing (the key times 2^64 / phi, the
 * product's top bits): addresses are aligned, their low bits zero, and the
 * top bits of the product depend on every bit of the key. No order of
 * iteration is offered: the passes' figures never depend on where an entry
 * sits. */

struct cmt_addr_entry {
    uint64_t addr;   /* 0: empty slot (the passes never keep address 0) */
    uint64_t size;
    int32_t device;
    uint8_t ns;
    uint8_t tag;     /* the pass's own */
};

struct cmt_addr_table {
    struct cmt_addr_entry *t;
    size_t cap;      /* a power of two, or 0 before the first insertion */
    size_t count;
    unsigned shift;  /* 64 - log2(cap) */
};

static inline size_t cmt_addr_table_home(const struct cmt_addr_table *t, uint8_t ns, uint64_t addr)
{
    return (size_t)(((addr ^ ((uint64_t)ns << 59)) * 0x9e3779b97f4a7c15ull) >> t->shift);
}

/* The entry of (ns, addr), or NULL. */
static inline struct cmt_addr_entry *cmt_addr_table_find(const struct cmt_addr_table *t, uint8_t ns, uint64_t addr)
{
    if (!t->count)
        return NULL;
    size_t mask = t->cap - 1;
    for (size_t i = cmt_addr_table_home(t, ns, addr);; i = (i + 1) & mask) {
        struct cmt_addr_entry *e = &t->t[i];
        if (e->addr == addr && e->ns == ns)
            return e;
        if (!e->addr)
            return NULL;
    }
}

void cmt_addr_table_init(struct cmt_addr_table *t);
void cmt_addr_table_free(struct cmt_addr_table *t);
/* cmt_addr_table_put when the table must grow first (out of line). */
struct cmt_addr_entry *cmt_addr_table_put_grow(struct cmt_addr_table *t, uint8_t ns, uint64_t addr, uint64_t size,
                                               int32_t device, uint8_t tag);

/* Inserts (ns, addr), which must not be in the table (find it and erase it
 * first) and must not be 0. Returns the entry, or NULL when out of memory
 * (the table is unchanged). */
static inline struct cmt_addr_entry *cmt_addr_table_put(struct cmt_addr_table *t, uint8_t ns, uint64_t addr,
                                                        uint64_t size, int32_t device, uint8_t tag)
{
    if (__builtin_expect((t->count + 1) * 2 > t->cap, 0))
        return cmt_addr_table_put_grow(t, ns, addr, size, device, tag);
    size_t mask = t->cap - 1, i = cmt_addr_table_home(t, ns, addr);
    while (t->t[i].addr)
        i = (i + 1) & mask;
    struct cmt_addr_entry *e = &t->t[i];
    *e = (struct cmt_addr_entry){.addr = addr, .size = size, .device = device, .ns = ns, .tag = tag};
    t->count++;
    return e;
}
/* Removes e, an entry of the table. */
void cmt_addr_table_erase(struct cmt_addr_table *t, struct cmt_addr_entry *e);

#endif
