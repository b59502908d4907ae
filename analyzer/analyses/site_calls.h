/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_SITE_CALLS_H
#define CUMEMTRACE_ANALYZER_SITE_CALLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* How often each call site allocates, and how many of its allocations are
 * short-lived: a loop calling cudaMalloc 200,000 times is a performance bug
 * (each call synchronizes the device) even when it leaks nothing, and the
 * views sorted by bytes never show it.
 *
 * An allocation is short-lived when it was released before its call site
 * allocated again on the same thread: allocate, use, release, and the next
 * round asks again, where one buffer kept across the rounds (or a pool)
 * would do. Judged at the site's next allocation, so two buffers of one loop
 * with the same lifetimes read the same (a rule of "before the thread
 * allocates anything else" called the inner one short-lived and the outer
 * one not), and the last allocation of a site is never judged: a buffer
 * made once and released at teardown is not short-lived. No threshold of
 * time to tune, so it reads the same on a fast and a slow machine; only a
 * bound, CMT_SHORT_LIVED_MAX_NS, beyond which a buffer is not short-lived
 * whatever came after it. Only memory counts (not VMM reservations or
 * mappings), and not stream-ordered allocations (cudaMallocAsync): their
 * pool is already what the advice would suggest.
 *
 * It follows the replay as an observer (replay.h): per stack id, fixed
 * memory; per (site, thread), the site's last allocation there. */
#define CMT_SHORT_LIVED_MAX_NS 100000000ull /* 100 ms */

struct cmt_site_calls_cell {
    uint64_t calls;          /* successful allocations */
    uint64_t short_lived;    /* of them, released before the thread allocated again */
    uint64_t short_bytes;    /* their bytes */
    uint64_t short_life_ns;  /* their lifetimes, summed */
};

/* The last allocation of a site on a thread, until the site allocates
 * there again. */
struct cmt_site_calls_last {
    uint64_t key;   /* stack << 32 | tid, + 1; 0: empty slot */
    uint64_t addr;
    uint64_t ts;
    uint64_t size;
    uint64_t life;  /* when released: how long it lived (stale before) */
    uint8_t ns;     /* namespace (live_set.h) */
    bool released;
};

struct cmt_site_calls {
    struct cmt_site_calls_cell *by_stack; /* indexed by stack id */
    /* Indexed by stack id: the last allocation on the first thread that
     * allocated there (key: tid + 1), the one most sites ever see: found
     * without hashing. The site's other threads are in last. */
    struct cmt_site_calls_last *own;
    size_t cap;
    struct cmt_site_calls_last *last;     /* open addressing by key, at most half full */
    size_t last_cap;                      /* power of two */
    size_t n_last;
    uint64_t calls, short_lived; /* over every site */
    struct cmt_replay_observer observer;
};

int cmt_site_calls_init(struct cmt_site_calls *s);
void cmt_site_calls_free(struct cmt_site_calls *s);
/* s->observer is what a command attaches (cmt_analysis_options'
 * observers, or cmt_replay_add_observer); s must outlive the replay. */
/* The cell of stack id stack (zeros when it never allocated). */
struct cmt_site_calls_cell cmt_site_calls_get(const struct cmt_site_calls *s, uint32_t stack);

/* What the observer does with each change (replay.h's on_change), inline
 * for a caller that follows several views in one call (alloc_views.h).
 * The rare paths are out of line: */
/* makes room for stack in by_stack and own; NULL when out of memory */
struct cmt_site_calls_cell *cmt_site_calls_grow(struct cmt_site_calls *s, uint32_t stack);
/* the (site, thread) entry of key (cmt_site_calls_last_key) for a thread
 * other than the site's first, absent from the table: made; NULL when out
 * of memory */
struct cmt_site_calls_last *cmt_site_calls_last_insert(struct cmt_site_calls *s, uint64_t key);

static inline uint64_t cmt_site_calls_last_key(uint32_t stack, uint32_t tid)
{
    return ((uint64_t)stack << 32 | tid) + 1;
}

/* The slot of key in a table of cap slots, or the empty one ending its run. */
static inline size_t cmt_site_calls_last_slot(const struct cmt_site_calls_last *t, size_t cap, uint64_t key)
{
    size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
    while (t[i].key && t[i].key != key)
        i = (i + 1) & (cap - 1);
    return i;
}

/* The (site, thread) entry, made when absent (make); NULL when absent or
 * out of memory. stack < s->cap: the caller made sure. */
static inline struct cmt_site_calls_last *cmt_site_calls_last_for(struct cmt_site_calls *s, uint32_t stack,
                                                                  uint32_t tid, bool make)
{
    struct cmt_site_calls_last *own = &s->own[stack];
    if (__builtin_expect(own->key == (uint64_t)tid + 1, 1))
        return own;
    if (!own->key) { /* the site's first thread (none is in last then) */
        if (!make)
            return NULL;
        *own = (struct cmt_site_calls_last){.key = (uint64_t)tid + 1};
        return own;
    }
    /* a thread other than the site's first: the (site, thread) table,
     * probed here (a call per lookup was 15 instructions per event of
     * bench_gen_trace, whose sites allocate on several threads) */
    uint64_t key = cmt_site_calls_last_key(stack, tid);
    struct cmt_site_calls_last *t = &s->last[cmt_site_calls_last_slot(s->last, s->last_cap, key)];
    if (__builtin_expect(t->key != 0, 1))
        return t;
    return make ? cmt_site_calls_last_insert(s, key) : NULL;
}

/* A change of an allocation of a kind that holds memory (the caller tested
 * cmt_kind_holds_memory) during an event (r->event set). Returns 0, or -1
 * when out of memory. */
static inline __attribute__((always_inline)) int cmt_site_calls_memory_change(struct cmt_site_calls *s,
                                                                              const struct cmt_replay *r,
                                                                              const struct cmt_live *l, bool live)
{
    if (live) {
        struct cmt_site_calls_cell *c;
        if (__builtin_expect(l->stack >= s->cap, 0)) {
            /* (the test of NULL on this path only) */
            if (!(c = cmt_site_calls_grow(s, l->stack)))
                return -1;
        } else {
            c = &s->by_stack[l->stack];
        }
        c->calls++;
        s->calls++;
        if (l->kind == CMT_KIND_ASYNC)
            return 0; /* a pool serves it already */
        struct cmt_site_calls_last *t = cmt_site_calls_last_for(s, l->stack, l->tid, true);
        if (!t)
            return -1;
        /* The site asks again here: was its last allocation released
         * before? */
        if (t->released && t->life <= CMT_SHORT_LIVED_MAX_NS) {
            c->short_lived++;
            c->short_bytes += t->size;
            c->short_life_ns += t->life;
            s->short_lived++;
        }
        /* key stays; life is read only once released is set again */
        t->addr = l->addr;
        t->ts = l->ts;
        t->size = l->size;
        t->ns = l->ns;
        t->released = false;
        return 0;
    }
    /* A release needs no cell: a site past cap never allocated during an
     * event, and has no last allocation either. */
    if (l->kind == CMT_KIND_ASYNC || l->stack >= s->cap)
        return 0;
    struct cmt_site_calls_last *t = cmt_site_calls_last_for(s, l->stack, l->tid, false);
    if (t && !t->released && t->addr == l->addr && t->ns == l->ns && t->ts == l->ts) {
        t->released = true;
        t->life = r->event->ts > l->ts ? r->event->ts - l->ts : 0;
    }
    return 0;
}

/* The observer's on_change: any change. */
static inline int cmt_site_calls_change(struct cmt_site_calls *s, const struct cmt_replay *r,
                                        const struct cmt_live *l, bool live)
{
    if (!cmt_kind_holds_memory(l->kind) || !r->event)
        return 0;
    return cmt_site_calls_memory_change(s, r, l, live);
}

#endif
