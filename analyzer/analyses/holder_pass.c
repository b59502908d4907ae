/* SPDX-License-Identifier: MIT */
#include "holder_pass.h"

#include <stdlib.h>
#include <string.h>

static int on_change(void *ctx, const struct cmt_replay *r, const struct cmt_live *l, bool live)
{
    cmt_holder_pass_change(ctx, r, l, live);
    return 0;
}

int cmt_holder_pass_init(struct cmt_holder_pass *p, cmt_holder_fn holder_of, void *ctx, uint32_t stack_id_limit)
{
    memset(p, 0, sizeof *p);
    p->holder_of = holder_of;
    p->holder_ctx = ctx;
    p->stack_id_limit = stack_id_limit;
    p->n_pages = ((size_t)stack_id_limit + CMT_HOLDER_PAGE - 1) / CMT_HOLDER_PAGE + 1;
    p->pages = calloc(p->n_pages, sizeof *p->pages);
    p->observer = (struct cmt_replay_observer){.ctx = p, .on_change = on_change};
    return p->pages ? 0 : -1;
}

void cmt_holder_pass_free(struct cmt_holder_pass *p)
{
    for (size_t i = 0; p->pages && i < p->n_pages; i++)
        free(p->pages[i]);
    free(p->pages);
    p->pages = NULL;
    p->n_pages = 0;
}

void cmt_holder_pass_classify(struct cmt_holder_pass *p, uint64_t stack)
{
    enum cmt_holder h = p->holder_of(p->holder_ctx, stack);
    if (stack >= p->stack_id_limit)
        return; /* the replay counts it as no stack's (0) */
    uint8_t **slot = &p->pages[stack >> CMT_HOLDER_PAGE_SHIFT];
    uint8_t *page = *slot;
    if (!page) {
        page = calloc(CMT_HOLDER_PAGE, 1);
        if (!page) {
            p->out_of_memory = true;
            return;
        }
        __atomic_store_n(slot, page, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&page[stack & (CMT_HOLDER_PAGE - 1)], (uint8_t)(h + 1), __ATOMIC_RELAXED);
    if (h != CMT_HOLDER_OTHER && !p->any_holder)
        __atomic_store_n(&p->any_holder, true, __ATOMIC_RELAXED);
}
