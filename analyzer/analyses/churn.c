/* SPDX-License-Identifier: MIT */
#include "churn.h"

#include <stdlib.h>
#include <string.h>

static inline uint64_t size_key(uint64_t size)
{
    return size ? size : UINT64_MAX;
}

static inline uint32_t slot_of(uint64_t key, uint32_t cap)
{
    return cmt_size_set_slot(key, cap);
}

void cmt_size_set_free(struct cmt_size_set *s)
{
    if (!s->pooled)
        free(s->slots);
    memset(s, 0, sizeof *s);
}

#define SLOT_POOL_BLOCK (64u * 1024u)

/* n zeroed bytes (a multiple of 8) from the pool; NULL when out of memory. */
static void *slot_pool_take(struct cmt_slot_pool *p, size_t n)
{
    if (n > p->left) {
        if (p->n_blocks == p->blocks_cap) {
            size_t cap = p->blocks_cap ? p->blocks_cap * 2 : 16;
            void **b = realloc(p->blocks, cap * sizeof *b);
            if (!b)
                return NULL;
            p->blocks = b;
            p->blocks_cap = cap;
        }
        /* a table larger than a block gets one of its own */
        size_t size = n > SLOT_POOL_BLOCK ? n : SLOT_POOL_BLOCK;
        char *block = malloc(size); /* zeroed as handed out: calloc clears it with rep stosb */
        if (!block)
            return NULL;
        p->blocks[p->n_blocks++] = block;
        if (n > SLOT_POOL_BLOCK)
            return memset(block, 0, n);
        p->next = block;
        p->left = size;
    }
    void *out = p->next;
    p->next += n;
    p->left -= n;
    return memset(out, 0, n);
}

void cmt_slot_pool_free(struct cmt_slot_pool *p)
{
    for (size_t i = 0; i < p->n_blocks; i++)
        free(p->blocks[i]);
    free(p->blocks);
    memset(p, 0, sizeof *p);
}

bool cmt_size_set_contains(const struct cmt_size_set *s, uint64_t size)
{
    if (!s->cap)
        return false;
    uint64_t key = size_key(size);
    for (uint32_t i = slot_of(key, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (s->slots[i] == key)
            return true;
        if (!s->slots[i])
            return false;
    }
}

/* Tables hold 8 slots, then 128: at most CMT_CHURN_MAX_SIZES keys fill
 * them three quarters. A site with a handful of sizes keeps 64 bytes; one
 * past that grows once, not four times (each a calloc, a rehash and a
 * free: about half of what counting distinct sizes cost on
 * bench_gen_trace's log-uniform sizes, which fill a table per site). */
#define SIZE_SET_SMALL 8u
#define SIZE_SET_LARGE 128u

static int grow(struct cmt_size_set *s, struct cmt_slot_pool *pool)
{
    uint32_t cap = !s->cap ? SIZE_SET_SMALL : s->cap < SIZE_SET_LARGE ? SIZE_SET_LARGE : s->cap * 2;
    uint64_t *slots = pool ? slot_pool_take(pool, cap * sizeof *slots) : calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (uint32_t i = 0; i < s->cap; i++) {
        uint64_t key = s->slots[i];
        if (!key)
            continue;
        uint32_t j = slot_of(key, cap);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = key;
    }
    if (!s->pooled)
        free(s->slots); /* a pool's tables go with the pool */
    s->slots = slots;
    s->cap = cap;
    s->pooled = pool != NULL;
    return 0;
}

/* Inserts key, not in s, into a larger table. */
static __attribute__((noinline)) int grow_and_insert(struct cmt_size_set *s, uint64_t key, struct cmt_slot_pool *pool)
{
    if (grow(s, pool) != 0)
        return -1;
    uint32_t i = slot_of(key, s->cap);
    while (s->slots[i])
        i = (i + 1) & (s->cap - 1);
    s->slots[i] = key;
    s->count++;
    return 0;
}

/* A saturated set takes the same path (the key is found, or the count is
 * at the limit): its callers skip it (cmt_churn_site_alloc says when). */
static inline int size_set_add(struct cmt_size_set *s, uint64_t size, struct cmt_slot_pool *pool)
{
    uint64_t key = size_key(size);
    /* One probe finds the key or the slot it goes in. */
    uint32_t i = 0;
    if (s->cap) {
        for (i = slot_of(key, s->cap); s->slots[i]; i = (i + 1) & (s->cap - 1))
            if (s->slots[i] == key)
                return 0;
    }
    if (s->count >= CMT_CHURN_MAX_SIZES) {
        s->saturated = true;
        return 0;
    }
    if ((s->count + 1) * 4 > s->cap * 3)
        return grow_and_insert(s, key, pool); /* out of line: the path above keeps few registers */
    s->slots[i] = key;
    s->count++;
    return 0;
}

int cmt_size_set_add(struct cmt_size_set *s, uint64_t size)
{
    /* Past the limit the answer ("at least") cannot change: no probe. A
     * site allocating a new size every time (measured: bench/gen_trace's
     * log-uniform sizes) would otherwise miss in a 64 KiB table per event. */
    if (s->saturated)
        return 0;
    return size_set_add(s, size, NULL);
}

int cmt_size_set_add_pooled(struct cmt_size_set *s, uint64_t size, struct cmt_slot_pool *pool)
{
    return size_set_add(s, size, pool);
}

int cmt_size_set_merge(struct cmt_size_set *into, const struct cmt_size_set *from)
{
    for (uint32_t i = 0; i < from->cap; i++)
        if (from->slots[i] && cmt_size_set_add(into, from->slots[i] == UINT64_MAX ? 0 : from->slots[i]) != 0)
            return -1;
    if (from->saturated)
        into->saturated = true;
    return 0;
}

void cmt_churn_init(struct cmt_churn *c)
{
    memset(c, 0, sizeof *c);
}

void cmt_churn_free(struct cmt_churn *c)
{
    for (size_t i = 0; i < c->cap; i++)
        cmt_size_set_free(&c->sites[i].sizes);
    free(c->sites);
    cmt_slot_pool_free(&c->pool);
    memset(c, 0, sizeof *c);
}

struct cmt_churn_site *cmt_churn_site_grow(struct cmt_churn *c, uint32_t stack)
{
    if (stack >= c->cap) {
        size_t cap = c->cap ? c->cap : 64;
        while (cap <= stack)
            cap *= 2;
        struct cmt_churn_site *s = realloc(c->sites, cap * sizeof *s);
        if (!s)
            return NULL;
        memset(s + c->cap, 0, (cap - c->cap) * sizeof *s);
        for (size_t i = c->cap; i < cap; i++)
            s[i].min_size = UINT64_MAX;
        c->sites = s;
        c->cap = cap;
    }
    return &c->sites[stack];
}

static int row_cmp(const void *pa, const void *pb)
{
    const struct cmt_churn_row *a = pa, *b = pb;
    if (a->distinct != b->distinct)
        return a->distinct < b->distinct ? 1 : -1;
    if (a->allocs != b->allocs)
        return a->allocs < b->allocs ? 1 : -1;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return 0;
}

long cmt_churn_rank(const struct cmt_churn_row *rows, size_t n, uint64_t min_distinct, struct cmt_churn_row **out)
{
    struct cmt_churn_row *r = malloc((n ? n : 1) * sizeof *r);
    if (!r)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (rows[i].distinct >= min_distinct)
            r[k++] = rows[i];
    qsort(r, k, sizeof *r, row_cmp);
    *out = r;
    return (long)k;
}
