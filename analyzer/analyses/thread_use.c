/* SPDX-License-Identifier: MIT */
#include "thread_use.h"

#include <stdlib.h>
#include <string.h>

/* The row of tid when it is not the last one used (out of line: the
 * per-event path then saves no registers for it, callgrind). */
static __attribute__((noinline)) struct cmt_thread_use_row *row_find(struct cmt_thread_use *t, uint32_t tid)
{
    /* Few threads allocate device memory (tens in a PyTorch job): a scan of
     * the rows costs less than a table. */
    for (size_t i = t->n_rows; i-- > 0;)
        if (t->rows[i].tid == tid) {
            t->last = i;
            return &t->rows[i];
        }
    if (t->n_rows == t->rows_cap) {
        size_t cap = t->rows_cap ? t->rows_cap * 2 : 8;
        struct cmt_thread_use_row *n = realloc(t->rows, cap * sizeof *n);
        if (!n)
            return NULL;
        t->rows = n;
        t->rows_cap = cap;
    }
    t->rows[t->n_rows] = (struct cmt_thread_use_row){.tid = tid};
    t->last = t->n_rows;
    return &t->rows[t->n_rows++];
}

static inline struct cmt_thread_use_row *row_for(struct cmt_thread_use *t, uint32_t tid)
{
    if (__builtin_expect(t->last < t->n_rows && t->rows[t->last].tid == tid, 1))
        return &t->rows[t->last];
    return row_find(t, tid);
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct cmt_thread_use *t = ctx;
    if (!cmt_kind_holds_memory(l->kind) || cmt_class_of_allocation(l->kind, l->device) != CMT_CLASS_DEVICE ||
        !r->event)
        return 0;
    /* l->tid: the thread that made it, whichever thread releases it */
    struct cmt_thread_use_row *row = row_for(t, l->tid);
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

/* The observer's callbacks (at the end of the file). */

int cmt_thread_use_init(struct cmt_thread_use *t)
{
    memset(t, 0, sizeof *t);
    t->observer = (struct cmt_replay_observer){
        .ctx = t, .on_change = on_change};
    return 0;
}

void cmt_thread_use_free(struct cmt_thread_use *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}
