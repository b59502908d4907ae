/* SPDX-License-Identifier: MIT */
/* The job view from summaries as text and as JSON: the comparison and the
 * job view `report` gives from the traces, by the same renderers, without
 * the sections of each trace (docs/report.md, "A job at scale"). */
#include <stdio.h>

#include "job_report.h"
#include "json_writer.h"
#include "render_parts.h"
#include "text_escape.h"

void cmt_summary_set_render_text(const struct cmt_summary_set *s, FILE *out)
{
    fprintf(out, "Job view from %zu %s (each trace summed up where it lies by `cumemtrace summarize`", s->n,
            s->n == 1 ? "summary" : "summaries");
    if (s->settings[0])
        fprintf(out, " %s", cmt_esc(s->settings));
    fputs("; `cumemtrace report TRACE` gives a trace's full report)\n", out);
    cmt_compare_render_text(s->summaries, s->n, out);
    if (!s->jobs) {
        fputs("\nJob view: out of memory while grouping the traces by job\n", out);
        return;
    }
    struct cmt_job_render_options jopt = {s->job_columns, s->clock_tolerance_ns, true};
    cmt_job_render_text(s->jobs, &jopt, out);
}

/* {"summaries": [{"summary", "trace"}...], "settings", "comparison", "jobs"}:
 * "comparison" and "jobs" as `report --json` gives them from the traces. */
void cmt_summary_set_render_json(const struct cmt_summary_set *s, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "summaries");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < s->n; i++) {
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "summary");
        cmt_json_string(&j, s->paths[i]);
        cmt_json_key(&j, "trace");
        cmt_json_string(&j, s->summaries[i].trace);
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_key(&j, "settings");
    cmt_json_string(&j, s->settings);
    cmt_json_key(&j, "comparison");
    cmt_compare_render_json(s->summaries, s->n, &j);
    cmt_json_key(&j, "jobs");
    if (!s->jobs) {
        cmt_json_null(&j);
    } else {
        struct cmt_job_render_options jopt = {s->job_columns, s->clock_tolerance_ns, true};
        cmt_job_render_json(s->jobs, &jopt, &j);
    }
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}
