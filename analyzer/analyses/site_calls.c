/* SPDX-License-Identifier: MIT */
#include "site_calls.h"

#include <stdlib.h>
#include <string.h>

struct cmt_site_calls_cell cmt_site_calls_get(const struct cmt_site_calls *s, uint32_t stack)
{
    if (stack < s->cap)
        return s->by_stack[stack];
    return (struct cmt_site_calls_cell){0};
}

static struct cmt_site_calls_cell *cell_for(struct cmt_site_calls *s, uint32_t stack)
{
    if (stack >= s->cap) {
        size_t cap = s->cap ? s->cap : 256;
        while (cap <= stack)
            cap *= 2;
        struct cmt_site_calls_cell *n = realloc(s->by_stack, cap * sizeof *n);
        if (!n)
            return NULL;
        memset(n + s->cap, 0, (cap - s->cap) * sizeof *n);
        s->by_stack = n;
        s->cap = cap;
    }
    return &s->by_stack[stack];
}

static size_t thread_slot(const struct cmt_site_calls_thread *t, size_t cap, uint32_t tid)
{
    size_t i = (size_t)(tid * 2654435761u) & (cap - 1);
    while (t[i].used && t[i].tid != tid)
        i = (i + 1) & (cap - 1);
    return i;
}

static struct cmt_site_calls_thread *thread_for(struct cmt_site_calls *s, uint32_t tid)
{
    if (s->last && s->last->tid == tid)
        return s->last;
    size_t i = thread_slot(s->threads, s->threads_cap, tid);
    if (s->threads[i].used)
        return s->last = &s->threads[i];
    if ((s->n_threads + 1) * 2 > s->threads_cap) {
        size_t cap = s->threads_cap * 2;
        struct cmt_site_calls_thread *n = calloc(cap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t k = 0; k < s->threads_cap; k++)
            if (s->threads[k].used)
                n[thread_slot(n, cap, s->threads[k].tid)] = s->threads[k];
        free(s->threads);
        s->threads = n;
        s->threads_cap = cap;
        i = thread_slot(n, cap, tid);
    }
    s->threads[i] = (struct cmt_site_calls_thread){.tid = tid, .used = true};
    s->n_threads++;
    return s->last = &s->threads[i];
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    struct cmt_site_calls *s = ctx;
    if (!cmt_kind_holds_memory(l->kind) || !r->event)
        return 0;
    struct cmt_site_calls_thread *t = thread_for(s, r->event->tid);
    if (!t)
        return -1;
    if (live) {
        struct cmt_site_calls_cell *c = cell_for(s, l->stack);
        if (!c)
            return -1;
        c->calls++;
        s->calls++;
        *t = (struct cmt_site_calls_thread){
            .tid = t->tid, .used = true, .pending = true, .ns = l->ns, .addr = l->addr, .ts = l->ts};
        return 0;
    }
    uint64_t life = r->event->ts > l->ts ? r->event->ts - l->ts : 0;
    if (t->pending && t->addr == l->addr && t->ns == l->ns && t->ts == l->ts && life <= CMT_SHORT_LIVED_MAX_NS) {
        struct cmt_site_calls_cell *c = cell_for(s, l->stack);
        if (!c)
            return -1;
        c->short_lived++;
        c->short_bytes += l->size;
        c->short_life_ns += life;
        s->short_lived++;
        t->pending = false;
    }
    /* Released after the bound: no longer pending either. */
    if (t->pending && t->addr == l->addr && t->ns == l->ns && t->ts == l->ts)
        t->pending = false;
    /* Releasing something else keeps it pending: only another allocation
     * in between makes an allocation more than short-lived. */
    return 0;
}

/* The observer's callbacks (at the end of the file). */

int cmt_site_calls_init(struct cmt_site_calls *s)
{
    memset(s, 0, sizeof *s);
    s->threads_cap = 16;
    s->threads = calloc(s->threads_cap, sizeof *s->threads);
    if (!s->threads)
        return -1;
    s->observer = (struct cmt_replay_observer){
        .ctx = s, .on_change = on_change};
    return 0;
}

void cmt_site_calls_free(struct cmt_site_calls *s)
{
    free(s->by_stack);
    free(s->threads);
    memset(s, 0, sizeof *s);
}
