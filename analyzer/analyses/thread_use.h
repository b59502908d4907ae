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
    /* the row found last (most events follow one of the same thread);
     * NULL before the first: one load and a compare find it, where an
     * index tested against n_rows took twice the instructions */
    struct cmt_thread_use_row *last;
    struct cmt_replay_observer observer;
};

int cmt_thread_use_init(struct cmt_thread_use *t);
void cmt_thread_use_free(struct cmt_thread_use *t);
/* What the observer does with each change (replay.h's on_change), inline
 * for a caller that follows several views in one call (alloc_views.h). */
/* The row of tid, made when new, when it is not the last one used (out
 * of line); NULL when out of memory. */
struct cmt_thread_use_row *cmt_thread_use_row_find(struct cmt_thread_use *t, uint32_t tid);

static inline struct cmt_thread_use_row *cmt_thread_use_row_for(struct cmt_thread_use *t, uint32_t tid)
{
    struct cmt_thread_use_row *row = t->last;
    if (__builtin_expect(row && row->tid == tid, 1))
        return row;
    return cmt_thread_use_row_find(t, tid);
}

/* A change of a device-resident allocation (the caller tested
 * cmt_kind_holds_memory and the class) during an event (r->event set).
 * Returns 0, or -1 when out of memory. */
static inline __attribute__((always_inline)) int cmt_thread_use_device_change(struct cmt_thread_use *t,
                                                                              const struct cmt_replay *r,
                                                                              const struct cmt_live *l, bool live)
{
    /* l->tid: the thread that made it, whichever thread releases it */
    struct cmt_thread_use_row *row = cmt_thread_use_row_for(t, l->tid);
    if (!row)
        return -1;
    if (live) {
        row->allocs++;
        row->alloc_bytes += l->size;
        row->live += l->size;
        row->live_count++;
        if (row->live > row->peak) {
            row->peak = row->live;
            row->peak_count = row->live_count;
            row->peak_ts = r->event->ts;
        }
        return 0;
    }
    row->live -= l->size <= row->live ? l->size : row->live;
    row->live_count -= row->live_count > 0;
    if (r->event->tid != l->tid)
        row->frees_by_others++;
    return 0;
}

/* The observer's on_change: any change. */
static inline int cmt_thread_use_change(struct cmt_thread_use *t, const struct cmt_replay *r,
                                        const struct cmt_live *l, bool live)
{
    if (!cmt_kind_holds_memory(l->kind) || cmt_class_of_allocation(l->kind, l->device) != CMT_CLASS_DEVICE ||
        !r->event)
        return 0;
    return cmt_thread_use_device_change(t, r, l, live);
}
/* t->observer is what a command attaches (cmt_analysis_options'
 * observers, or cmt_replay_add_observer); t must outlive the replay. */

#endif
