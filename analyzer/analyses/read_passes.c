/* SPDX-License-Identifier: MIT */
#include "read_passes.h"

#include <stdlib.h>
#include <string.h>

#include "replay.h"

static void note_asked(struct cmt_read_passes *p, uint64_t stack)
{
    if (stack >= p->asked_cap) {
        size_t cap = p->asked_cap ? p->asked_cap : 256;
        while (cap <= stack)
            cap *= 2;
        uint8_t *more = realloc(p->asked, cap);
        if (!more) {
            p->out_of_memory = true;
            return;
        }
        memset(more + p->asked_cap, 0, cap - p->asked_cap);
        p->asked = more;
        p->asked_cap = cap;
    }
    if (p->asked[stack])
        return;
    if (p->n_asked_order == p->asked_order_cap) {
        size_t cap = p->asked_order_cap ? p->asked_order_cap * 2 : 256;
        uint32_t *more = realloc(p->asked_order, cap * sizeof *more);
        if (!more) {
            p->out_of_memory = true;
            return;
        }
        p->asked_order = more;
        p->asked_order_cap = cap;
    }
    p->asked[stack] = 1;
    p->asked_order[p->n_asked_order++] = (uint32_t)stack;
}

static enum cmt_holder holder_of(void *ctx, uint64_t stack)
{
    struct cmt_read_passes *p = ctx;
    /* ids that cannot be a stack's are no stack: nothing to note */
    if (stack && stack <= UINT32_MAX && (stack >= p->asked_cap || !p->asked[stack]))
        note_asked(p, stack);
    return cmt_stack_holders_holder(&p->holders, stack);
}

static bool tables_ready(struct cmt_read_passes *p, uint64_t stack)
{
    if (stack < p->cap)
        return true;
    size_t cap = p->cap ? p->cap : 256;
    while (cap <= stack)
        cap *= 2;
    uint8_t *kind = realloc(p->first_kind, cap), *ans;
    if (kind)
        p->first_kind = kind;
    ans = kind ? realloc(p->answered, cap) : NULL;
    if (ans)
        p->answered = ans;
    if (!kind || !ans) {
        p->out_of_memory = true;
        return false;
    }
    memset(p->first_kind + p->cap, 0, cap - p->cap);
    memset(p->answered + p->cap, 0, cap - p->cap);
    p->cap = cap;
    return true;
}

/* One of PyTorch's allocations without its cache, as far as the read has
 * gone: the stack's classes, and the kind of its first allocation (the
 * replay's site kind). */
static bool tensor_so_far(void *ctx, const struct cmt_event_in *e)
{
    struct cmt_read_passes *p = ctx;
    uint64_t s = e->stack;
    if (e->kind != CMT_KIND_DEVICE || s == 0 || s >= p->stack_id_limit)
        return false;
    if (cmt_stack_holders_holder(&p->holders, s) != CMT_HOLDER_PYTORCH ||
        cmt_stack_holders_cache(&p->holders, s) != CMT_HOLDER_OTHER || !tables_ready(p, s))
        return false;
    bool yes = p->first_kind[s] == CMT_KIND_DEVICE + 1;
    p->answered[s] |= yes ? 2 : 1;
    return yes;
}

int cmt_read_passes_init(struct cmt_read_passes *p, const struct cmt_trace_model *model,
                         const struct cmt_frames_options *frames, bool holder_peaks, bool uncached,
                         const struct cmt_ta_settings *w_settings, size_t n_settings, uint64_t capacity,
                         uint64_t stop_ts, uint32_t stack_id_limit)
{
    memset(p, 0, sizeof *p);
    cmt_stack_holders_init(&p->holders, model, frames);
    p->stack_id_limit = stack_id_limit;
    if (holder_peaks) {
        p->holder_on = true;
        if (cmt_holder_pass_init(&p->holder, holder_of, p, stack_id_limit) != 0)
            return -1;
    }
    if (uncached) {
        p->uncached_w = calloc(1, sizeof *p->uncached_w);
        if (!p->uncached_w)
            return -1;
        if (cmt_whatif_init(p->uncached_w, w_settings, n_settings, capacity) != 0) {
            free(p->uncached_w);
            p->uncached_w = NULL;
            return -1;
        }
        p->uncached_on = true;
        cmt_uncached_pass_init(&p->uncached, model, p->uncached_w, tensor_so_far, p, stop_ts);
    }
    return 0;
}

/* Whether PyTorch's libraries are among the modules read so far. */
static bool pytorch_loaded(const struct cmt_trace_model *m)
{
    for (uint32_t i = 1; i < m->n_modules; i++) {
        const char *base = cmt_basename(cmt_model_string(m, m->modules[i].path_id));
        if (!strncmp(base, "libc10", 6) || !strncmp(base, "libtorch", 8))
            return true;
    }
    return false;
}

/* Every pass, for a trace where the uncached pass may run. */
static __attribute__((noinline)) void all_passes(struct cmt_read_passes *p, const struct cmt_event_in *e)
{
    if (!p->uncached_decided) {
        p->uncached_decided = true;
        if (p->uncached_on && !pytorch_loaded(p->holders.model)) {
            p->uncached_on = false;
            cmt_whatif_free(p->uncached_w);
            free(p->uncached_w);
            p->uncached_w = NULL;
        }
    }
    if (p->holder_on)
        cmt_holder_pass_read(&p->holder, e);
    if (!p->uncached_on)
        return;
    if (e->type == CMT_REC_ALLOC && e->result == 0 && e->stack && e->stack < p->stack_id_limit &&
        e->kind < CMT_KIND_COUNT && e->device >= -1 && e->device < CMT_MAX_DEVICES &&
        (e->stack >= p->cap || !p->first_kind[e->stack]) && tables_ready(p, e->stack) && !p->first_kind[e->stack])
        p->first_kind[e->stack] = (uint8_t)(e->kind + 1);
    /* A segment of PyTorch's cache: the cache was on, and the report
     * replays nothing without it (whatif_uncached.c): the pass stops. */
    if (e->type == CMT_REC_ALLOC && e->result == 0 && e->stack < p->cap &&
        p->first_kind[e->stack] == CMT_KIND_DEVICE + 1 &&
        cmt_stack_holders_cache(&p->holders, e->stack) == CMT_HOLDER_PYTORCH) {
        p->uncached_on = false;
        cmt_uncached_pass_free(&p->uncached);
        cmt_whatif_free(p->uncached_w);
        free(p->uncached_w);
        p->uncached_w = NULL;
        return;
    }
    if (!p->uncached.stopped)
        cmt_uncached_pass_event(&p->uncached, e);
}

void cmt_read_passes_event(void *ctx, const struct cmt_event_in *e)
{
    struct cmt_read_passes *p = ctx;
    if (p->uncached_on || !p->uncached_decided) {
        all_passes(p, e);
        return;
    }
    if (p->holder_on)
        cmt_holder_pass_read(&p->holder, e);
}

struct cmt_holder_pass *cmt_read_passes_holders(struct cmt_read_passes *p)
{
    return p->holder_on ? &p->holder : NULL;
}

void cmt_read_passes_holders_followed(struct cmt_read_passes *p)
{
    p->holder_attached = p->holder_on;
}

void cmt_read_passes_finish(struct cmt_read_passes *p)
{
    if (p->uncached_on)
        cmt_uncached_pass_finish(&p->uncached);
}

void cmt_read_passes_free(struct cmt_read_passes *p)
{
    cmt_holder_pass_free(&p->holder);
    cmt_uncached_pass_free(&p->uncached);
    if (p->uncached_w) {
        cmt_whatif_free(p->uncached_w);
        free(p->uncached_w);
    }
    free(p->first_kind);
    free(p->answered);
    free(p->asked);
    free(p->asked_order);
    cmt_stack_holders_free(&p->holders);
    memset(p, 0, sizeof *p);
}

const struct cmt_holder_pass *cmt_read_passes_holder_peaks(const struct cmt_read_passes *p)
{
    if (!p || !p->holder_on || p->holder.out_of_memory || p->out_of_memory || !p->holder_attached ||
        !cmt_stack_holders_exact(&p->holders))
        return NULL;
    return &p->holder;
}

const uint32_t *cmt_read_passes_holder_asked(const struct cmt_read_passes *p, size_t *n)
{
    *n = p->n_asked_order;
    return p->asked_order;
}

struct cmt_whatif *cmt_read_passes_take_uncached(struct cmt_read_passes *p, const uint8_t *tensor, size_t n,
                                                 const struct cmt_ta_settings *settings, size_t n_settings,
                                                 uint64_t capacity)
{
    if (!p || !p->uncached_on || !p->uncached_w || p->out_of_memory || cmt_uncached_pass_failed(&p->uncached) ||
        !cmt_stack_holders_exact(&p->holders) || !cmt_uncached_pass_model_same(&p->uncached))
        return NULL;
    struct cmt_whatif *w = p->uncached_w;
    if (n_settings != w->n_asked || capacity != w->capacity ||
        (n_settings && memcmp(settings, w->asked, n_settings * sizeof *settings) != 0))
        return NULL;
    for (size_t s = 0; s < p->cap; s++) {
        if (!p->answered[s])
            continue;
        bool final = s < n && tensor[s];
        if ((p->answered[s] & 2 && !final) || (p->answered[s] & 1 && final))
            return NULL;
    }
    p->uncached_w = NULL;
    return w;
}
