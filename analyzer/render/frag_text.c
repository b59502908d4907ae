/* SPDX-License-Identifier: MIT */
/* `cumemtrace frag`: the out-of-memory and fragmentation view for people
 * (docs/fragmentation.md). */
#include <stdio.h>

#include "render_parts.h"
#include "text_escape.h"

void cmt_frag_render_text(const struct cmt_report *r, FILE *out)
{
    const struct cmt_report_trace *t = &r->trace;
    fprintf(out, "cumemtrace frag of %s\n", cmt_esc(t->path));
    fprintf(out, "  %llu events, %llu fragmentation checkpoints, %llu device samples\n",
            (unsigned long long)t->events, (unsigned long long)t->frag_checkpoints,
            (unsigned long long)t->device_samples);
    if (t->failed_allocs == 0)
        fprintf(out, "\nNo allocation failed.\n");
    cmt_forensics_render_text(r, out, true);
    if (r->n_warnings) {
        fprintf(out, "\nWarnings:\n");
        for (size_t i = 0; i < r->n_warnings; i++)
            fprintf(out, "  - %s\n", cmt_esc(r->warnings[i]));
    }
}
