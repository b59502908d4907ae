/* SPDX-License-Identifier: MIT */
/* Several traces as one JSON object: {"processes": [report, ...],
 * "comparison": {...}, "jobs": [...]} (docs/report.md). */
#include <stdio.h>

#include "job_report.h"
#include "json_writer.h"
#include "render_parts.h"

void cmt_report_set_render_json(const struct cmt_report_set *s, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "processes");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < s->n; i++) {
        const struct cmt_report *r = s->report(s->ctx, i);
        if (r) {
            cmt_report_render_json_value(r, &j);
            fflush(out);
        } else {
            cmt_json_begin_object(&j);
            cmt_json_key(&j, "trace");
            cmt_json_string(&j, s->paths[i]);
            cmt_json_key(&j, "error");
            cmt_json_string(&j, s->summaries[i].error);
            cmt_json_end_object(&j);
        }
        s->done(s->ctx, i);
    }
    cmt_json_end_array(&j);
    cmt_json_key(&j, "comparison");
    cmt_compare_render_json(s->summaries, s->n, &j);
    cmt_json_key(&j, "jobs");
    if (!s->jobs) {
        cmt_json_null(&j);
    } else {
        struct cmt_job_render_options jopt = {s->job_columns, s->clock_tolerance_ns};
        cmt_job_render_json(s->jobs, &jopt, &j);
    }
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}
