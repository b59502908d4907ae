/* SPDX-License-Identifier: MIT */
/* What every text section prints of a call site: its frames, and the label
 * of the suppression that set it aside (report_text.c and the sections
 * beside it: blocks, tensors, IPC, diff). */
#include <stdio.h>

#include "render_parts.h"
#include "text_escape.h"
#include "units.h"

void cmt_render_text_frames(const struct cmt_report *r, FILE *out, uint64_t stack, const char *indent)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    if (sf->n == 0) {
        fprintf(out, "%s(no stack recorded)\n", indent);
        return;
    }
    size_t limit = r->opt->max_frames && r->opt->max_frames < sf->n ? r->opt->max_frames : sf->n;
    char buf[1024];
    for (size_t i = 0; i < limit; i++) {
        cmt_frame_describe(&sf->frames[i], buf, sizeof buf);
        fprintf(out, "%s%s\n", indent, cmt_esc(buf));
    }
    if (limit < sf->n)
        fprintf(out, "%s... %zu more %s (--max-frames 0 shows all)\n", indent, sf->n - limit,
                cmt_plural(sf->n - limit, "frame", "frames"));
}

void cmt_report_suppression_label(const struct cmt_report *r, uint32_t suppression, char *buf, size_t len)
{
    if (suppression == 0 || suppression > r->n_suppressions) {
        snprintf(buf, len, "suppressed");
        return;
    }
    const struct cmt_report_suppression *x = &r->suppressions[suppression - 1];
    if (x->reason && x->reason[0])
        snprintf(buf, len, "suppressed by %s:%u (%s)", x->source, x->line, x->reason);
    else
        snprintf(buf, len, "suppressed by %s:%u (leak:%s)", x->source, x->line, x->pattern);
}
