/* SPDX-License-Identifier: MIT */
#include "holder_pass.h"

#include <stdlib.h>
#include <string.h>

/* An allocation of a holder's, live in the pass. */
struct cmt_held_alloc {
    uint64_t addr, size;
    uint8_t used, ns, holder;
    int8_t device;
};

void cmt_holder_pass_init(struct cmt_holder_pass *p, cmt_holder_fn holder_of, void *ctx, uint64_t stop_ts)
{
    memset(p, 0, sizeof *p);
    p->holder_of = holder_of;
    p->holder_ctx = ctx;
    p->stop_ts = stop_ts;
}

void cmt_holder_pass_free(struct cmt_holder_pass *p)
{
    free(p->t);
    p->t = NULL;
    p->cap = p->count = 0;
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

static size_t slot_hash(const struct cmt_holder_pass *p, uint8_t ns, uint64_t addr)
{
    uint64_t h = (addr ^ ((uint64_t)ns << 59)) * 0x9e3779b97f4a7c15ull;
    return (size_t)(h >> 20) & (p->cap - 1);
}

static struct cmt_held_alloc *find(struct cmt_holder_pass *p, uint8_t ns, uint64_t addr)
{
    if (!p->cap)
        return NULL;
    for (size_t i = slot_hash(p, ns, addr);; i = (i + 1) & (p->cap - 1)) {
        struct cmt_held_alloc *a = &p->t[i];
        if (!a->used)
            return NULL;
        if (a->addr == addr && a->ns == ns)
            return a;
    }
}

static int grow(struct cmt_holder_pass *p)
{
    size_t cap = p->cap ? p->cap * 2 : 256;
    struct cmt_held_alloc *old = p->t, *t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    size_t old_cap = p->cap;
    p->t = t;
    p->cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].used)
            continue;
        size_t j = slot_hash(p, old[i].ns, old[i].addr);
        while (t[j].used)
            j = (j + 1) & (cap - 1);
        t[j] = old[i];
    }
    free(old);
    return 0;
}

/* Removes a, shifting back the entries of its probe run (no tombstones). */
static void erase(struct cmt_holder_pass *p, struct cmt_held_alloc *a)
{
    size_t mask = p->cap - 1, hole = (size_t)(a - p->t);
    p->t[hole].used = 0;
    p->count--;
    for (size_t i = (hole + 1) & mask; p->t[i].used; i = (i + 1) & mask) {
        size_t home = slot_hash(p, p->t[i].ns, p->t[i].addr);
        /* i may move to hole when its home is not in (hole, i] cyclically */
        bool stays = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (stays)
            continue;
        p->t[hole] = p->t[i];
        p->t[i].used = 0;
        hole = i;
    }
}

static void release(struct cmt_holder_pass *p, struct cmt_held_alloc *a)
{
    uint64_t *v = &p->live[a->device][a->holder], *c = &p->live_count[a->device][a->holder];
    *v -= *v < a->size ? *v : a->size;
    *c -= *c ? 1 : 0;
    erase(p, a);
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
        if (!p->count)
            return 0;
        struct cmt_held_alloc *a = find(p, (uint8_t)cmt_namespace_of_kind(cmt_api_default_kind(e->api)), e->addr);
        if (a)
            release(p, a);
        return 0;
    }
    if (e->type != CMT_REC_ALLOC || !cmt_kind_holds_memory(e->kind))
        return 0;
    uint8_t ns = (uint8_t)cmt_namespace_of_kind(e->kind);
    struct cmt_held_alloc *a = p->count ? find(p, ns, e->addr) : NULL;
    if (a) /* handed out again while live: its release went unrecorded (as the replay counts it) */
        release(p, a);
    if (e->device < 0 || e->device >= CMT_MAX_DEVICES ||
        cmt_class_of_allocation(e->kind, e->device) != CMT_CLASS_DEVICE)
        return 0;
    enum cmt_holder h = holder_of_stack(p, e->stack);
    if (h == CMT_HOLDER_OTHER)
        return 0;
    if ((p->count + 1) * 2 > p->cap && grow(p) != 0) {
        p->out_of_memory = true;
        p->stopped = true;
        return 1;
    }
    size_t i = slot_hash(p, ns, e->addr);
    while (p->t[i].used)
        i = (i + 1) & (p->cap - 1);
    p->t[i] = (struct cmt_held_alloc){e->addr, e->size, 1, ns, (uint8_t)h, (int8_t)e->device};
    p->count++;
    uint64_t *v = &p->live[e->device][h], *c = &p->live_count[e->device][h];
    *v += e->size;
    *c += 1;
    struct cmt_holder_peak *pk = &p->peak[e->device][h];
    if (*v > pk->bytes)
        *pk = (struct cmt_holder_peak){*v, *c, e->ts};
    return 0;
}
