/* SPDX-License-Identifier: MIT */
#include "holder_pass.h"

#include <stdlib.h>
#include <string.h>

void cmt_holder_pass_init(struct cmt_holder_pass *p, cmt_holder_fn holder_of, void *ctx, uint64_t stop_ts)
{
    memset(p, 0, sizeof *p);
    cmt_addr_table_init(&p->live_allocs);
    p->holder_of = holder_of;
    p->holder_ctx = ctx;
    p->stop_ts = stop_ts;
}

void cmt_holder_pass_free(struct cmt_holder_pass *p)
{
    cmt_addr_table_free(&p->live_allocs);
    free(p->known);
    p->known = NULL;
    p->known_cap = 0;
}

/* holder_of's answer for stack, asked once: most events name a stack met
 * before (one load instead of a classification). */
static enum cmt_holder holder_of_stack(struct cmt_holder_pass *p, uint64_t stack)
{
    if (__builtin_expect(stack < p->known_cap && p->known[stack], 1))
        return (enum cmt_holder)(p->known[stack] - 1);
    enum cmt_holder h = p->holder_of(p->holder_ctx, stack);
    if (stack >= UINT32_MAX)
        return h;
    if (stack >= p->known_cap) {
        size_t cap = p->known_cap ? p->known_cap : 256;
        while (cap <= stack)
            cap *= 2;
        uint8_t *more = realloc(p->known, cap);
        if (!more)
            return h; /* asked again next time */
        memset(more + p->known_cap, 0, cap - p->known_cap);
        p->known = more;
        p->known_cap = cap;
    }
    p->known[stack] = (uint8_t)(h + 1);
    return h;
}

static void release(struct cmt_holder_pass *p, struct cmt_addr_entry *a)
{
    uint64_t *v = &p->live[a->device][a->tag], *c = &p->live_count[a->device][a->tag];
    *v -= *v < a->size ? *v : a->size;
    *c -= *c ? 1 : 0;
    cmt_addr_table_erase(&p->live_allocs, a);
}

int cmt_holder_pass_event(struct cmt_holder_pass *p, const struct cmt_event_in *e)
{
    if (p->stopped)
        return 1;
    if (p->stop_ts && e->ts > p->stop_ts) {
        p->stopped = true;
        return 1;
    }
    if (e->result != 0 || e->addr == 0)
        return 0;
    if (e->type == CMT_REC_FREE) {
        struct cmt_addr_entry *a = cmt_addr_table_find(
            &p->live_allocs, (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(e->api)), e->addr);
        if (a)
            release(p, a);
        return 0;
    }
    if (e->type != CMT_REC_ALLOC || !cmt_kind_holds_memory(e->kind))
        return 0;
    uint8_t ns = (uint8_t)cmt_namespace_of_kind(e->kind);
    struct cmt_addr_entry *a = cmt_addr_table_find(&p->live_allocs, ns, e->addr);
    if (a) /* handed out again while live: its release went unrecorded (as the replay counts it) */
        release(p, a);
    if (e->device < 0 || e->device >= CMT_MAX_DEVICES ||
        cmt_class_of_allocation(e->kind, e->device) != CMT_CLASS_DEVICE)
        return 0;
    enum cmt_holder h = holder_of_stack(p, e->stack);
    if (h == CMT_HOLDER_OTHER)
        return 0;
    if (!cmt_addr_table_put(&p->live_allocs, ns, e->addr, e->size, e->device, (uint8_t)h)) {
        p->out_of_memory = true;
        p->stopped = true;
        return 1;
    }
    uint64_t *v = &p->live[e->device][h], *c = &p->live_count[e->device][h];
    *v += e->size;
    *c += 1;
    struct cmt_holder_peak *pk = &p->peak[e->device][h];
    if (*v > pk->bytes)
        *pk = (struct cmt_holder_peak){*v, *c, e->ts};
    return 0;
}
