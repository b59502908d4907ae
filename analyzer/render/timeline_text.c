/* SPDX-License-Identifier: MIT */
/* `cumemtrace timeline`: one chart per series. */
#include <inttypes.h>
#include <stdio.h>

#include "render_parts.h"
#include "size_parse.h"
#include "timeline_chart.h"
#include "text_escape.h"

void cmt_timeline_render_text(const struct cmt_timeline_report *t, FILE *out)
{
    const struct cmt_timeline_model *v = &t->view;
    char b1[32], b2[32], when[32];
    fprintf(out, "cumemtrace timeline of %s\n", cmt_esc(t->path));
    cmt_format_duration(v->width, b1, sizeof b1);
    cmt_format_duration(cmt_timeline_report_rel_ns(t, v->end), b2, sizeof b2);
    fprintf(out, "  %zu buckets of %s, 0 s to %s\n", v->n, b1, b2);
    if (v->n_series == 0)
        fprintf(out, "\nNothing was allocated.\n");
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_model_series *se = &v->series[s];
        cmt_format_size(se->peak, b1, sizeof b1);
        cmt_format_size(se->live, b2, sizeof b2);
        cmt_format_duration(cmt_timeline_report_rel_ns(t, se->peak_ts), when, sizeof when);
        if (se->device < 0 && se->kind == CMT_TIMELINE_TOTAL)
            fprintf(out, "\nHost, total of pinned host memory (host-located VMM included)");
        else if (se->device < 0)
            fprintf(out, "\nHost, %s", se->name);
        else if (se->kind == CMT_TIMELINE_TOTAL)
            fprintf(out, "\nDevice %d, total of device-resident memory", se->device);
        else
            fprintf(out, "\nDevice %d, %s", se->device, se->name);
        fprintf(out, ": peak %s at %s, %s at the end\n", b1, when, b2);
        if (t->chart_series)
            cmt_timeline_chart(out, &t->chart, t->chart_series[s], t->chart_height, "  ", t->start_ns);
    }
}
