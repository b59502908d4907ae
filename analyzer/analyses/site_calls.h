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
 * An allocation is short-lived when the thread that made it releases it
 * before that thread allocates anything else (heaptrack's "temporary
 * allocations"): allocate, use, release, in a row. The rule needs no
 * threshold of time to tune, so it reads the same on a fast and a slow
 * machine; only a bound, CMT_SHORT_LIVED_MAX_NS, so that a thread's last
 * buffer released at exit seconds later is not called short-lived (the
 * golden mixed.bin's loader thread). Only memory counts (not VMM
 * reservations or mappings).
 *
 * It follows the replay as an observer (replay.h): per stack id, fixed
 * memory; per thread, the allocation it made last. */
#define CMT_SHORT_LIVED_MAX_NS 100000000ull /* 100 ms */

struct cmt_site_calls_cell {
    uint64_t calls;          /* successful allocations */
    uint64_t short_lived;    /* of them, released before the thread allocated again */
    uint64_t short_bytes;    /* their bytes */
    uint64_t short_life_ns;  /* their lifetimes, summed */
};

struct cmt_site_calls_thread {
    uint32_t tid;
    bool used;
    bool pending;       /* its last allocation is still live and nothing else came since */
    uint8_t ns;         /* namespace of that allocation (live_set.h) */
    uint64_t addr;
    uint64_t ts;
};

struct cmt_site_calls {
    struct cmt_site_calls_cell *by_stack; /* indexed by stack id */
    size_t cap;
    struct cmt_site_calls_thread *threads; /* open addressing by tid, at most half full */
    size_t threads_cap;                    /* power of two */
    size_t n_threads;
    struct cmt_site_calls_thread *last; /* the thread of the last event (most events follow one of the same) */
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
