/* SPDX-License-Identifier: MIT */
#include "holder_pass.h"

#include <stdlib.h>
#include <string.h>

const uint8_t cmt_holder_no_page[CMT_HOLDER_PAGE];

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
    p->pages = malloc(p->n_pages * sizeof *p->pages);
    p->observer = (struct cmt_replay_observer){.ctx = p, .on_change = on_change};
    if (!p->pages)
        return -1;
    for (size_t i = 0; i < p->n_pages; i++)
        p->pages[i] = cmt_holder_no_page;
    return 0;
}

void cmt_holder_pass_free(struct cmt_holder_pass *p)
{
    for (size_t i = 0; p->pages && i < p->n_pages; i++)
        if (p->pages[i] != cmt_holder_no_page)
            free((uint8_t *)p->pages[i]);
    free(p->pages);
    p->pages = NULL;
    p->n_pages = 0;
}

void cmt_holder_pass_classify(struct cmt_holder_pass *p, uint64_t stack)
{
    enum cmt_holder h = p->holder_of(p->holder_ctx, stack);
    if (stack >= p->stack_id_limit)
        return; /* the replay counts it as no stack's (0) */
    const uint8_t **slot = &p->pages[stack >> CMT_HOLDER_PAGE_SHIFT];
    uint8_t *page = (uint8_t *)*slot;
    if (page == cmt_holder_no_page) {
        page = calloc(CMT_HOLDER_PAGE, 1);
        if (!page) {
            p->out_of_memory = true;
            return;
        }
        /* the replay reads zeros from one page or the other until the
         * byte below (release: with the page's zeros) */
        __atomic_store_n(slot, (const uint8_t *)page, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&page[stack & (CMT_HOLDER_PAGE - 1)], (uint8_t)(h + 1), __ATOMIC_RELAXED);
    if (h != CMT_HOLDER_OTHER && !p->any_holder)
        __atomic_store_n(&p->any_holder, true, __ATOMIC_RELAXED);
}
