/* SPDX-License-Identifier: MIT */
#include "thread_use.h"

#include <stdlib.h>
#include <string.h>

static struct cmt_thread_use_row *row_for(struct cmt_thread_use *t, uint32_t tid)
{
    /* Few threads allocate device memory (tens in a PyTorch job): a scan of
     * the rows, the last one found first, costs less than a table. */
    for (size_t i = t->n_rows; i-- > 0;)
        if (t->rows[i].tid == tid)
            return &t->rows[i];
    if (t->n_rows == t->rows_cap) {
        size_t cap = t->rows_cap ? t->rows_cap * 2 : 8;
        struct cmt_thread_use_row *n = realloc(t->rows, cap * sizeof *n);
        if (!n)
            return NULL;
        t->rows = n;
        t->rows_cap = cap;
    }
    t->rows[t->n_rows] = (struct cmt_thread_use_row){.tid = tid};
    return &t->rows[t->n_rows++];
}

static size_t live_hash(uint64_t addr, uint8_t ns, size_t cap)
{
    uint64_t h = (addr ^ ((uint64_t)ns << 59)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 17) & (cap - 1);
}

/* Rebuilds the table with room for twice the live entries (deleted slots
 * dropped), so a long run of short-lived allocations never grows it. */
static int live_rehash(struct cmt_thread_use *t)
{
    size_t live = 0;
    for (size_t k = 0; k < t->live_cap; k++)
        live += t->live[k].used == 1;
    size_t cap = 64;
    while (cap < (live + 1) * 4)
        cap *= 2;
    struct cmt_thread_use_live *n = calloc(cap, sizeof *n);
    if (!n)
        return -1;
    for (size_t k = 0; k < t->live_cap; k++) {
        const struct cmt_thread_use_live *e = &t->live[k];
        if (e->used != 1)
            continue;
        size_t i = live_hash(e->addr, e->ns, cap);
        while (n[i].used)
            i = (i + 1) & (cap - 1);
        n[i] = *e;
    }
    free(t->live);
    t->live = n;
    t->live_cap = cap;
    t->live_used = live;
    return 0;
}

static int live_put(struct cmt_thread_use *t, uint64_t addr, uint8_t ns, uint32_t tid)
{
    if ((t->live_used + 1) * 2 > t->live_cap && live_rehash(t) != 0)
        return -1;
    size_t i = live_hash(addr, ns, t->live_cap);
    while (t->live[i].used && !(t->live[i].used == 1 && t->live[i].addr == addr && t->live[i].ns == ns))
        i = (i + 1) & (t->live_cap - 1);
    if (!t->live[i].used)
        t->live_used++;
    if (t->live[i].used != 1)
        t->live_n++;
    t->live[i] = (struct cmt_thread_use_live){.addr = addr, .tid = tid, .ns = ns, .used = 1};
    return 0;
}

/* Removes (addr, ns) and gives the thread that made it; false when unknown. */
static bool live_take(struct cmt_thread_use *t, uint64_t addr, uint8_t ns, uint32_t *tid)
{
    size_t i = live_hash(addr, ns, t->live_cap);
    while (t->live[i].used) {
        if (t->live[i].used == 1 && t->live[i].addr == addr && t->live[i].ns == ns) {
            *tid = t->live[i].tid;
            t->live[i].used = 2;
            t->live_n--;
            return true;
        }
        i = (i + 1) & (t->live_cap - 1);
    }
    return false;
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct cmt_thread_use *t = ctx;
    if (!cmt_kind_holds_memory(l->kind) || cmt_class_of_allocation(l->kind, l->device) != CMT_CLASS_DEVICE ||
        !r->event)
        return 0;
    uint32_t tid = r->event->tid;
    if (!live && !(t->live_n && live_take(t, l->addr, l->ns, &tid))) {
        if (!t->n_rows)
            return 0;
        tid = t->rows[0].tid; /* not in the table: the first thread's */
    }
    struct cmt_thread_use_row *row = row_for(t, tid);
    if (!row)
        return -1;
    if (live) {
        if (row != &t->rows[0] && live_put(t, l->addr, l->ns, tid) != 0)
            return -1;
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
    if (r->event->tid != tid)
        row->frees_by_others++;
    return 0;
}

/* The observer's callbacks (at the end of the file). */

int cmt_thread_use_init(struct cmt_thread_use *t)
{
    memset(t, 0, sizeof *t);
    t->live_cap = 64;
    t->live = calloc(t->live_cap, sizeof *t->live);
    if (!t->live)
        return -1;
    t->observer = (struct cmt_replay_observer){
        .ctx = t, .on_change = on_change};
    return 0;
}

void cmt_thread_use_free(struct cmt_thread_use *t)
{
    free(t->rows);
    free(t->live);
    memset(t, 0, sizeof *t);
}
