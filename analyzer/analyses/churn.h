/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_CHURN_H
#define CUMEMTRACE_ANALYZER_CHURN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Size churn per call site (docs/fragmentation.md): how many distinct sizes
 * a site allocates and how many of its allocations are released during the
 * run (short-lived). Many distinct sizes that come and go are what strands
 * memory in first-fit heaps and caching allocators: a cached block can serve
 * only requests no larger than itself, and each new size may need a new one.
 *
 * Distinct sizes are counted exactly up to CMT_CHURN_MAX_SIZES per site,
 * then reported as "at least" that many. The limit is what the set costs:
 * a site of random sizes probes its table once per allocation, a cache miss
 * once thousands of sites have tables of their own. With 4096 the report of
 * bench/gen_trace's 10 million events (4,000 stacks, log-uniform sizes) took
 * 2.3 s and 83 MiB against 0.70 s and 23 MiB without the forensics; with 64,
 * 0.95 s and 41 MiB. Past 64 sizes a site's ranking is by its allocations. */

#define CMT_CHURN_MAX_SIZES 64u

/* The distinct sizes of one site: an open-addressing set. */
struct cmt_size_set {
    uint64_t *slots; /* 0 = empty; size 0 is stored as UINT64_MAX */
    uint32_t cap, count;
    bool saturated;  /* more than CMT_CHURN_MAX_SIZES sizes were seen */
    bool pooled;     /* slots come from a cmt_slot_pool: not freed alone */
};

/* Zeroed slot tables for many sets, carved from large blocks and freed
 * together: the sets of a trace's call sites, thousands of which grow a
 * table each (a calloc and a free cost more than the dozens of adds that
 * fill it). */
struct cmt_slot_pool {
    void **blocks;
    size_t n_blocks, blocks_cap;
    char *next; /* free space of the last block */
    size_t left;
};

void cmt_slot_pool_free(struct cmt_slot_pool *p);

/* The home slot of key (size, or UINT64_MAX for 0) in a table of cap
 * slots, a power of two. */
static inline uint32_t cmt_size_set_slot(uint64_t key, uint32_t cap)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

void cmt_size_set_free(struct cmt_size_set *s);
/* Returns 0, or -1 when out of memory. */
int cmt_size_set_add(struct cmt_size_set *s, uint64_t size);
/* The same with the tables from pool (the set must use that pool only). A
 * saturated set is probed all the same, to no effect: callers test
 * saturated first (cmt_churn_site_alloc). */
int cmt_size_set_add_pooled(struct cmt_size_set *s, uint64_t size, struct cmt_slot_pool *pool);
bool cmt_size_set_contains(const struct cmt_size_set *s, uint64_t size);
/* Adds every size of from into into (call sites merged by the report). */
int cmt_size_set_merge(struct cmt_size_set *into, const struct cmt_size_set *from);

struct cmt_churn_site {
    uint64_t allocs;
    uint64_t frees;          /* released during the run: short-lived */
    uint64_t alloc_bytes;
    uint64_t min_size, max_size; /* min_size: UINT64_MAX before the first allocation */
    uint64_t lifetime_ns;    /* summed over the released ones */
    uint64_t last_size;      /* most sites repeat one size: no set probe then */
    /* Every distinct size, once the site has allocated two: a site of one
     * size (min_size) has none, so a trace of many call sites pays no table
     * for each (64 bytes a site: issue 32). */
    struct cmt_size_set sizes;
};

/* Per raw stack id. */
struct cmt_churn {
    struct cmt_churn_site *sites;
    size_t cap;
    struct cmt_slot_pool pool; /* the sites' size tables */
};

void cmt_churn_init(struct cmt_churn *c);
void cmt_churn_free(struct cmt_churn *c);
/* The site's record, the table grown to hold it; NULL when out of memory. */
struct cmt_churn_site *cmt_churn_site_grow(struct cmt_churn *c, uint32_t stack);

/* Counts an allocation of size at site s. Returns true when size must go to
 * the site's set: it differs from the site's last size and the set is not
 * saturated (most sites repeat one size: no set probe then). */
static inline bool cmt_churn_site_alloc(struct cmt_churn_site *s, uint64_t size)
{
    uint64_t allocs = s->allocs;
    s->allocs = allocs + 1;
    s->alloc_bytes += size;
    if (size == s->last_size && allocs)
        return false; /* min_size and max_size hold it already */
    if (size < s->min_size) /* UINT64_MAX before the first (cmt_churn_site_grow) */
        s->min_size = size;
    if (size > s->max_size)
        s->max_size = size;
    s->last_size = size;
    return allocs && !s->sizes.saturated; /* the first size needs no set */
}

/* The distinct sizes site s allocated (up to CMT_CHURN_MAX_SIZES). */
static inline uint32_t cmt_churn_site_distinct(const struct cmt_churn_site *s)
{
    return s->sizes.count ? s->sizes.count : s->allocs ? 1u : 0u;
}

/* Adds size, new to site s, to its set (after cmt_churn_site_alloc said so):
 * the first time, with the one size the site had until now. Returns 0, or
 * -1 when out of memory. */
static inline int cmt_churn_add_size(struct cmt_churn_site *s, uint64_t size, struct cmt_slot_pool *pool)
{
    if (__builtin_expect(s->sizes.count != 0, 1)) {
        /* A size seen before, in its home slot: found without a call (a
         * site of a few sizes taken in turn comes here for most of its
         * allocations; the call was about 12 instructions per event of the
         * twin, callgrind). */
        uint64_t key = size ? size : UINT64_MAX;
        if (s->sizes.slots[cmt_size_set_slot(key, s->sizes.cap)] == key)
            return 0;
    } else {
        /* one size so far: min_size and max_size are it and size */
        uint64_t before = s->min_size == size ? s->max_size : s->min_size;
        if (cmt_size_set_add_pooled(&s->sizes, before, pool) != 0)
            return -1;
    }
    return cmt_size_set_add_pooled(&s->sizes, size, pool);
}

static inline void cmt_churn_site_release(struct cmt_churn_site *s, uint64_t lifetime_ns)
{
    s->frees++;
    s->lifetime_ns += lifetime_ns;
}

/* Called for every allocation and release of a replay: inline, and only a
 * size not seen last time at the site goes to the set. */
static inline int cmt_churn_alloc(struct cmt_churn *c, uint32_t stack, uint64_t size)
{
    struct cmt_churn_site *s = stack < c->cap ? &c->sites[stack] : cmt_churn_site_grow(c, stack);
    if (!s)
        return -1;
    return cmt_churn_site_alloc(s, size) ? cmt_churn_add_size(s, size, &c->pool) : 0;
}

static inline void cmt_churn_release(struct cmt_churn *c, uint32_t stack, uint64_t lifetime_ns)
{
    if (stack < c->cap)
        cmt_churn_site_release(&c->sites[stack], lifetime_ns);
}

/* A ranked row: sites ordered by distinct sizes, then allocations, then the
 * key (stable output). */
struct cmt_churn_row {
    uint64_t key; /* a canonical stack id in the report; the raw one here */
    uint64_t distinct;
    bool saturated;
    uint64_t allocs, frees, alloc_bytes, min_size, max_size, lifetime_ns;
    uint64_t paths; /* call sites merged into the row (a caching allocator's callers) */
    int allocator;  /* enum cmt_allocator_family of the row, 0 for none */
};

/* Sites with at least min_distinct sizes, ranked; *out is allocated (the
 * caller frees it). Returns the count, or -1 when out of memory. */
long cmt_churn_rank(const struct cmt_churn_row *rows, size_t n, uint64_t min_distinct, struct cmt_churn_row **out);

#endif
