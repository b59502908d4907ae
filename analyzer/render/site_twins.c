/* SPDX-License-Identifier: MIT */
#include "site_twins.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

static uint64_t stack_at(const void *rows, size_t stride, size_t off, size_t k)
{
    uint64_t v;
    memcpy(&v, (const char *)rows + k * stride + off, sizeof v);
    return v;
}

static bool same_string(const char *x, const char *y)
{
    return x == y || (x && y && !strcmp(x, y));
}

/* The two frames read the same (cmt_frame_describe would write the same),
 * without writing them: the lists compare every row with every other. */
static bool same_frame(const struct cmt_frame *x, const struct cmt_frame *y)
{
    bool full_x = x->function && x->file && x->line > 0, full_y = y->function && y->file && y->line > 0;
    if (full_x != full_y)
        return false;
    if (full_x)
        return x->line == y->line && x->inlined == y->inlined && same_string(x->function, y->function) &&
               same_string(x->file, y->file);
    const char *mx = cmt_basename(x->module), *my = cmt_basename(y->module);
    if (!!x->function != !!y->function || !same_string(mx, my))
        return false;
    if (x->function)
        return same_string(x->function, y->function);
    return x->ip == y->ip && (!*mx || x->module_offset == y->module_offset);
}

void cmt_print_twin_note(const struct cmt_report *r, FILE *out, const void *rows, size_t stride, size_t stack_offset,
                         size_t n, size_t i, const char *indent)
{
    uint64_t mine = stack_at(rows, stride, stack_offset, i);
    const struct cmt_stack_frames *a = cmt_frames_get(r->frames, mine);
    const struct cmt_frame *sa = cmt_stack_site(a);
    if (!sa)
        return;
    char name_a[1024], fa[1024];
    for (size_t j = 0; j < n; j++) {
        uint64_t other = stack_at(rows, stride, stack_offset, j);
        if (j == i || other == mine)
            continue;
        const struct cmt_stack_frames *b = cmt_frames_get(r->frames, other);
        const struct cmt_frame *sb = cmt_stack_site(b);
        if (!sb)
            continue;
        if (!same_frame(sa, sb))
            continue;
        size_t k = 0;
        while (k < a->n && k < b->n && same_frame(&a->frames[k], &b->frames[k]))
            k++;
        cmt_frame_describe(sa, name_a, sizeof name_a);
        if (k < a->n) {
            cmt_frame_describe(&a->frames[k], fa, sizeof fa);
            fprintf(out, "%s(another row is also %s: the stacks part at frame %zu, %s here)\n", indent, name_a, k + 1,
                    fa);
        } else {
            fprintf(out, "%s(another row is also %s: this stack ends after %zu %s, the other goes on)\n", indent,
                    name_a, k, k == 1 ? "frame" : "frames");
        }
        return;
    }
}
