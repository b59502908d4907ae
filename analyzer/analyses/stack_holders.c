/* SPDX-License-Identifier: MIT */
#include "stack_holders.h"

#include <stdlib.h>
#include <string.h>

void cmt_stack_holders_init(struct cmt_stack_holders *h, const struct cmt_trace_model *model,
                            const struct cmt_frames_options *opt)
{
    memset(h, 0, sizeof *h);
    h->model = model;
    h->opt = opt;
    h->first_early = UINT64_MAX;
}

void cmt_stack_holders_free(struct cmt_stack_holders *h)
{
    cmt_frames_free(h->frames);
    free(h->holder);
    free(h->cache);
    memset(h, 0, sizeof *h);
}

bool cmt_stack_holders_exact(const struct cmt_stack_holders *h)
{
    return !h->out_of_memory && h->first_early >= h->model->n_stacks;
}

/* The frames over what the model holds now; false when out of memory. */
static bool frames_ready(struct cmt_stack_holders *h)
{
    const struct cmt_trace_model *m = h->model;
    if (!h->frames) {
        h->frames = cmt_frames_new(m, h->opt);
        if (!h->frames) {
            h->out_of_memory = true;
            return false;
        }
    } else if ((m->n_modules != h->modules_known || m->n_stacks != h->stacks_known) &&
               cmt_frames_update(h->frames) != 0) {
        h->out_of_memory = true;
        return false;
    }
    h->modules_known = m->n_modules;
    h->stacks_known = m->n_stacks;
    return true;
}

static bool table_ready(struct cmt_stack_holders *h, uint64_t stack)
{
    if (stack < h->cap)
        return true;
    size_t cap = h->cap ? h->cap : 256;
    while (cap <= stack)
        cap *= 2;
    uint8_t *hold = realloc(h->holder, cap), *cache = realloc(h->cache, cap);
    if (hold)
        h->holder = hold;
    if (cache)
        h->cache = cache;
    if (!hold || !cache) {
        h->out_of_memory = true;
        return false;
    }
    memset(h->holder + h->cap, 0, cap - h->cap);
    memset(h->cache + h->cap, 0, cap - h->cap);
    h->cap = cap;
    return true;
}

/* Decides stack's classes (both at once: one resolution of its frames).
 * Returns false when the stack has none: no stack, not defined yet, or out
 * of memory. */
static bool decide(struct cmt_stack_holders *h, uint64_t stack)
{
    if (stack == 0 || h->out_of_memory)
        return false;
    if (stack >= h->model->n_stacks) {
        if (stack < h->first_early)
            h->first_early = stack;
        return false;
    }
    if (stack < h->cap && h->holder[stack])
        return true;
    if (!table_ready(h, stack) || !frames_ready(h))
        return false;
    h->holder[stack] = (uint8_t)(cmt_holder_of(h->frames, stack) + 1);
    h->cache[stack] = (uint8_t)(cmt_cache_of(h->frames, stack) + 1);
    return true;
}

enum cmt_holder cmt_stack_holders_holder(struct cmt_stack_holders *h, uint64_t stack)
{
    return decide(h, stack) ? (enum cmt_holder)(h->holder[stack] - 1) : CMT_HOLDER_OTHER;
}

enum cmt_holder cmt_stack_holders_cache(struct cmt_stack_holders *h, uint64_t stack)
{
    return decide(h, stack) ? (enum cmt_holder)(h->cache[stack] - 1) : CMT_HOLDER_OTHER;
}
