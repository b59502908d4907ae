/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_THREAD_USE_H
#define CUMEMTRACE_ANALYZER_THREAD_USE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* Device memory by the thread that allocated it: what each thread had live,
 * its peak and when, how many allocations it made and released. An
 * allocation counts for the thread that made it until it is released,
 * whichever thread releases it (a data loader's buffers freed by the main
 * thread stay the loader's until then). Device-resident memory of every
 * device together (the accounts' CMT_CLASS_DEVICE), the memory that runs
 * out; managed and pinned host memory are not counted.
 *
 * An observer of the replay (replay.h). Memory: one entry per thread and
 * one per live device allocation of a thread other than the first to
 * allocate (the thread that made it): an allocation the table does not
 * hold is the first thread's, so a program that allocates from one thread
 * costs no table work. */

struct cmt_thread_use_row {
    uint32_t tid;
    uint64_t live, live_count;   /* now (at exit, or --at, once the replay ended) */
    uint64_t peak, peak_count, peak_ts; /* peak_ts absolute; 0 peak: never any */
    uint64_t allocs, alloc_bytes;
    uint64_t frees_by_others;    /* its allocations released by another thread */
};

struct cmt_thread_use_live {
    uint64_t addr;
    uint32_t tid;
    uint8_t ns;
    uint8_t used; /* 0 empty, 1 used, 2 deleted */
};

struct cmt_thread_use {
    struct cmt_thread_use_row *rows; /* in order of first allocation */
    size_t n_rows, rows_cap;
    struct cmt_thread_use_live *live; /* open addressing by (ns, addr) */
    size_t live_cap, live_used;       /* live_used counts deleted slots too */
    size_t live_n;                    /* entries live (used == 1) */
    struct cmt_replay_observer observer;
};

int cmt_thread_use_init(struct cmt_thread_use *t);
void cmt_thread_use_free(struct cmt_thread_use *t);
/* t->observer is what a command attaches (cmt_analysis_options'
 * observers, or cmt_replay_add_observer); t must outlive the replay. */

#endif
