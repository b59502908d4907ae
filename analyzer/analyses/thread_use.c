/* SPDX-License-Identifier: MIT */
#include "thread_use.h"

#include <stdlib.h>
#include <string.h>

/* The row of tid when it is not the last one used (out of line: the
 * per-event path then saves no registers for it, callgrind). */
struct cmt_thread_use_row *cmt_thread_use_row_find(struct cmt_thread_use *t, uint32_t tid)
{
    /* Few threads allocate device memory (tens in a PyTorch job): a scan of
     * the rows costs less than a table. */
    for (size_t i = t->n_rows; i-- > 0;)
        if (t->rows[i].tid == tid) {
            t->last = &t->rows[i];
            return t->last;
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
    t->last = &t->rows[t->n_rows];
    return &t->rows[t->n_rows++];
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return cmt_thread_use_change(ctx, r, l, live);
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
