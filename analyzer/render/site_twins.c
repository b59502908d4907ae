/* SPDX-License-Identifier: MIT */
#include "site_twins.h"
#include "text_escape.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static int str_cmp(const char *x, const char *y)
{
    if (x == y)
        return 0;
    if (!x || !y)
        return x ? 1 : -1;
    return strcmp(x, y);
}

static bool full(const struct cmt_frame *f)
{
    return f->function && f->file && f->line > 0;
}

/* An order of frames in which 0 means cmt_frame_describe writes the two
 * the same, without writing them. */
static int frame_cmp(const struct cmt_frame *x, const struct cmt_frame *y)
{
    bool fx = full(x), fy = full(y);
    if (fx != fy)
        return fx ? 1 : -1;
    if (fx) {
        if (x->line != y->line)
            return x->line < y->line ? -1 : 1;
        if (x->inlined != y->inlined)
            return x->inlined ? 1 : -1;
        int c = str_cmp(x->function, y->function);
        return c ? c : str_cmp(x->file, y->file);
    }
    if (!x->function != !y->function)
        return x->function ? 1 : -1;
    const char *mx = cmt_basename(x->module), *my = cmt_basename(y->module);
    int c = str_cmp(mx, my);
    if (c)
        return c;
    if (x->function)
        return str_cmp(x->function, y->function);
    if (x->ip != y->ip)
        return x->ip < y->ip ? -1 : 1;
    if (!*mx)
        return 0;
    return x->module_offset < y->module_offset ? -1 : x->module_offset > y->module_offset;
}

struct twin_entry {
    size_t index;
    uint64_t stack;
    const struct cmt_frame *site;
};

static int entry_cmp(const void *pa, const void *pb)
{
    const struct twin_entry *a = pa, *b = pb;
    int c = frame_cmp(a->site, b->site);
    if (c)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

size_t *cmt_twins_find(const struct cmt_report *r, const void *rows, size_t stride, size_t stack_offset, size_t n)
{
    size_t *twin = malloc((n ? n : 1) * sizeof *twin);
    struct twin_entry *e = malloc((n ? n : 1) * sizeof *e);
    if (!twin || !e) {
        free(twin);
        free(e);
        return NULL;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        twin[i] = SIZE_MAX;
        uint64_t stack;
        memcpy(&stack, (const char *)rows + i * stride + stack_offset, sizeof stack);
        const struct cmt_frame *site = cmt_stack_site(cmt_frames_get(r->frames, stack));
        if (site)
            e[m++] = (struct twin_entry){i, stack, site};
    }
    qsort(e, m, sizeof *e, entry_cmp);
    for (size_t g = 0; g < m;) {
        size_t end = g + 1;
        while (end < m && frame_cmp(e[g].site, e[end].site) == 0)
            end++;
        /* The group's first row, and its first row of another stack: the
         * first other row of another stack than k's is one of them. */
        size_t other = g + 1;
        while (other < end && e[other].stack == e[g].stack)
            other++;
        for (size_t k = g; k < end; k++) {
            if (e[k].stack != e[g].stack)
                twin[e[k].index] = e[g].index;
            else if (other < end)
                twin[e[k].index] = e[other].index;
        }
        g = end;
    }
    free(e);
    return twin;
}

void cmt_print_twin_note(const struct cmt_report *r, FILE *out, uint64_t mine, uint64_t other, const char *indent)
{
    const struct cmt_stack_frames *a = cmt_frames_get(r->frames, mine), *b = cmt_frames_get(r->frames, other);
    const struct cmt_frame *sa = cmt_stack_site(a);
    if (!sa)
        return;
    size_t k = 0;
    while (k < a->n && k < b->n && frame_cmp(&a->frames[k], &b->frames[k]) == 0)
        k++;
    /* Where the stacks part is on screen (within the frames each row
     * shows), the rows read apart already: a note under every row of a
     * Python report whose sites share a helper said it again and again. */
    size_t shown = r->opt->max_frames ? r->opt->max_frames : SIZE_MAX;
    if (k < shown && (k < a->n || k < b->n))
        return;
    char name[1024], fa[1024];
    cmt_frame_describe(sa, name, sizeof name);
    if (k < a->n) {
        cmt_frame_describe(&a->frames[k], fa, sizeof fa);
        fprintf(out, "%s(another row is also %s: the stacks part at frame %zu, %s here)\n", indent, cmt_esc(name),
                k + 1, cmt_esc(fa));
    } else {
        fprintf(out, "%s(another row is also %s: this stack ends after %zu %s, the other goes on)\n", indent,
                cmt_esc(name), k,
                k == 1 ? "frame" : "frames");
    }
}
