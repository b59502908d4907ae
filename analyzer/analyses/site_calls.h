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
    uint64_t life;  /* when released: how long it lived */
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

#endif
