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

struct cmt_site_calls_cell *cmt_site_calls_grow(struct cmt_site_calls *s, uint32_t stack)
{
    size_t cap = s->cap ? s->cap : 256;
    while (cap <= stack)
        cap *= 2;
    struct cmt_site_calls_cell *n = realloc(s->by_stack, cap * sizeof *n);
    if (!n)
        return NULL;
    memset(n + s->cap, 0, (cap - s->cap) * sizeof *n);
    s->by_stack = n;
    struct cmt_site_calls_last *o = realloc(s->own, cap * sizeof *o);
    if (!o)
        return NULL; /* by_stack is larger: no harm, cap says what both hold */
    memset(o + s->cap, 0, (cap - s->cap) * sizeof *o);
    s->own = o;
    s->cap = cap;
    return &s->by_stack[stack];
}

struct cmt_site_calls_last *cmt_site_calls_last_insert(struct cmt_site_calls *s, uint64_t key)
{
    if ((s->n_last + 1) * 2 > s->last_cap) {
        size_t cap = s->last_cap * 2;
        struct cmt_site_calls_last *n = calloc(cap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t k = 0; k < s->last_cap; k++)
            if (s->last[k].key)
                n[cmt_site_calls_last_slot(n, cap, s->last[k].key)] = s->last[k];
        free(s->last);
        s->last = n;
        s->last_cap = cap;
    }
    size_t i = cmt_site_calls_last_slot(s->last, s->last_cap, key);
    s->last[i] = (struct cmt_site_calls_last){.key = key};
    s->n_last++;
    return &s->last[i];
}

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    return cmt_site_calls_change(ctx, r, l, live);
}

/* The observer's callbacks (at the end of the file). */

int cmt_site_calls_init(struct cmt_site_calls *s)
{
    memset(s, 0, sizeof *s);
    s->last_cap = 64;
    s->last = calloc(s->last_cap, sizeof *s->last);
    if (!s->last)
        return -1;
    s->observer = (struct cmt_replay_observer){
        .ctx = s, .on_change = on_change};
    return 0;
}

void cmt_site_calls_free(struct cmt_site_calls *s)
{
    free(s->by_stack);
    free(s->own);
    free(s->last);
    memset(s, 0, sizeof *s);
}
