/* SPDX-License-Identifier: MIT */
/* Several traces for people: each trace's report under a heading, then
 * their comparison and the job view (docs/report.md, "Several processes",
 * "A job of several processes"). */
#include <stdio.h>

#include "job_report.h"
#include "render_parts.h"
#include "text_escape.h"

void cmt_report_set_render_text(const struct cmt_report_set *s, FILE *out)
{
    for (size_t i = 0; i < s->n; i++) {
        if (s->ranks[i] >= 0)
            fprintf(out, "%s===== rank %lld: %s =====\n", i ? "\n" : "", (long long)s->ranks[i], cmt_esc(s->paths[i]));
        else
            fprintf(out, "%s===== %s =====\n", i ? "\n" : "", cmt_esc(s->paths[i]));
        fflush(out); /* before what reading the trace says on stderr */
        const struct cmt_report *r = s->report(s->ctx, i);
        if (r) {
            cmt_report_render_text(r, out);
            fflush(out);
        } else {
            fprintf(out, "not analysed: %s\n", cmt_esc(s->summaries[i].error));
        }
        s->done(s->ctx, i);
    }
    cmt_compare_render_text(s->summaries, s->n, out);
    if (!s->jobs) {
        fputs("\nJob view: out of memory while grouping the traces by job\n", out);
        return;
    }
    struct cmt_job_render_options jopt = {s->job_columns, s->clock_tolerance_ns};
    cmt_job_render_text(s->jobs, &jopt, out);
}
