/* SPDX-License-Identifier: MIT */
#include "site_twins.h"

#include <stddef.h>
#include <string.h>

static uint64_t stack_at(const void *rows, size_t stride, size_t off, size_t k)
{
    uint64_t v;
    memcpy(&v, (const char *)rows + k * stride + off, sizeof v);
    return v;
}

void cmt_print_twin_note(const struct cmt_report *r, FILE *out, const void *rows, size_t stride, size_t stack_offset,
                         size_t n, size_t i, const char *indent)
{
    uint64_t mine = stack_at(rows, stride, stack_offset, i);
    const struct cmt_stack_frames *a = cmt_frames_get(r->frames, mine);
    const struct cmt_frame *sa = cmt_stack_site(a);
    if (!sa)
        return;
    char name_a[1024], name_b[1024], fa[1024], fb[1024];
    cmt_frame_describe(sa, name_a, sizeof name_a);
    for (size_t j = 0; j < n; j++) {
        uint64_t other = stack_at(rows, stride, stack_offset, j);
        if (j == i || other == mine)
            continue;
        const struct cmt_stack_frames *b = cmt_frames_get(r->frames, other);
        const struct cmt_frame *sb = cmt_stack_site(b);
        if (!sb)
            continue;
        cmt_frame_describe(sb, name_b, sizeof name_b);
        if (strcmp(name_a, name_b))
            continue;
        size_t k = 0;
        for (; k < a->n && k < b->n; k++) {
            cmt_frame_describe(&a->frames[k], fa, sizeof fa);
            cmt_frame_describe(&b->frames[k], fb, sizeof fb);
            if (strcmp(fa, fb))
                break;
        }
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
