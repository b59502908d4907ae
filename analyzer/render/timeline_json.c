/* SPDX-License-Identifier: MIT */
/* `cumemtrace timeline --format json` (docs/report.md). */
#include <inttypes.h>
#include <stdio.h>

#include "json_writer.h"
#include "render_parts.h"

void cmt_timeline_render_json(const struct cmt_timeline_report *t, FILE *out)
{
    const struct cmt_timeline_model *v = &t->view;
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "trace");
    cmt_json_string(&j, t->path);
    cmt_json_key(&j, "start_realtime_ns");
    cmt_json_uint(&j, t->start_realtime_ns);
    cmt_json_key(&j, "end_ns");
    cmt_json_uint(&j, cmt_timeline_report_rel_ns(t, v->end));
    cmt_json_key(&j, "bucket_ns");
    cmt_json_uint(&j, v->width);
    cmt_json_key(&j, "buckets");
    cmt_json_begin_array(&j);
    for (size_t b = 0; b < v->n; b++) {
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "start_ns");
        cmt_json_uint(&j, cmt_timeline_report_rel_ns(t, v->starts[b]));
        cmt_json_key(&j, "allocs");
        cmt_json_uint(&j, v->counts[b].allocs);
        cmt_json_key(&j, "frees");
        cmt_json_uint(&j, v->counts[b].frees);
        cmt_json_key(&j, "failures");
        cmt_json_uint(&j, v->counts[b].failures);
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_key(&j, "series");
    cmt_json_begin_array(&j);
    static const char *const fields[] = {"min", "max", "last"};
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_model_series *se = &v->series[s];
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "device");
        cmt_json_int(&j, se->device);
        cmt_json_key(&j, "kind");
        cmt_json_string(&j, se->name);
        cmt_json_key(&j, "peak_bytes");
        cmt_json_uint(&j, se->peak);
        cmt_json_key(&j, "peak_time_ns");
        cmt_json_uint(&j, cmt_timeline_report_rel_ns(t, se->peak_ts));
        cmt_json_key(&j, "peak_bucket");
        cmt_json_uint(&j, se->peak_bucket);
        cmt_json_key(&j, "live_at_end_bytes");
        cmt_json_uint(&j, se->live);
        for (int f = 0; f < 3; f++) {
            cmt_json_key(&j, fields[f]);
            cmt_json_begin_array(&j);
            for (size_t b = 0; b < v->n; b++) {
                const struct cmt_timeline_cell *c = &se->cells[b];
                cmt_json_uint(&j, f == 0 ? c->min : f == 1 ? c->max : c->last);
            }
            cmt_json_end_array(&j);
        }
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}
