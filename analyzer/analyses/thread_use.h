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
 * An observer of the replay (replay.h). Memory: one entry per thread. The
 * thread that made an allocation comes with it from the replay's live set
 * (struct cmt_live's tid), so a release costs no lookup of its own. */

struct cmt_thread_use_row {
    uint32_t tid;
    uint64_t live, live_count;   /* now (at exit, or --at, once the replay ended) */
    uint64_t peak, peak_count, peak_ts; /* peak_ts absolute; 0 peak: never any */
    uint64_t allocs, alloc_bytes;
    uint64_t frees_by_others;    /* its allocations released by another thread */
};

struct cmt_thread_use {
    struct cmt_thread_use_row *rows; /* in order of first allocation */
    size_t n_rows, rows_cap;
    size_t last; /* the row found last (most events follow one of the same thread) */
    struct cmt_replay_observer observer;
};

int cmt_thread_use_init(struct cmt_thread_use *t);
void cmt_thread_use_free(struct cmt_thread_use *t);
/* t->observer is what a command attaches (cmt_analysis_options'
 * observers, or cmt_replay_add_observer); t must outlive the replay. */

#endif
