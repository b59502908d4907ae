/* SPDX-License-Identifier: MIT */
/* `cumemtrace timeline --format csv`: one row per time bucket (docs/report.md). */
#include <inttypes.h>
#include <stdio.h>

#include "render_parts.h"

static void series_label(const struct cmt_timeline_model_series *s, char *buf, size_t len)
{
    if (s->device < 0)
        snprintf(buf, len, "host.%s", s->name);
    else
        snprintf(buf, len, "dev%d.%s", s->device, s->name);
}

void cmt_timeline_render_csv(const struct cmt_timeline_report *t, FILE *out)
{
    const struct cmt_timeline_model *v = &t->view;
    char label[64];
    fprintf(out, "start_ns,end_ns,events,allocs,frees,failures");
    for (size_t s = 0; s < v->n_series; s++) {
        series_label(&v->series[s], label, sizeof label);
        fprintf(out, ",%s.min,%s.max,%s.last", label, label, label);
    }
    fprintf(out, ",peaks\n");
    for (size_t b = 0; b < v->n; b++) {
        const struct cmt_timeline_counts *c = &v->counts[b];
        fprintf(out, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
               cmt_timeline_report_rel_ns(t, v->starts[b]), cmt_timeline_report_rel_ns(t, v->starts[b + 1]), c->allocs + c->frees + c->failures, c->allocs, c->frees, c->failures);
        for (size_t s = 0; s < v->n_series; s++) {
            const struct cmt_timeline_cell *cell = &v->series[s].cells[b];
            fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, cell->min, cell->max, cell->last);
        }
        fprintf(out, ",");
        bool first = true;
        for (size_t s = 0; s < v->n_series; s++) {
            const struct cmt_timeline_model_series *se = &v->series[s];
            if (se->peak && se->peak_bucket == b) {
                series_label(se, label, sizeof label);
                fprintf(out, "%s%s", first ? "" : ";", label);
                first = false;
            }
        }
        fprintf(out, "\n");
    }
}
