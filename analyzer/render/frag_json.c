/* SPDX-License-Identifier: MIT */
/* `cumemtrace frag --format json` (docs/fragmentation.md). */
#include <stdio.h>

#include "json_writer.h"
#include "render_parts.h"

void cmt_frag_render_json(const struct cmt_report *r, FILE *out)
{
    const struct cmt_report_trace *t = &r->trace;
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "trace");
    cmt_json_string(&j, t->path);
    char v[32];
    snprintf(v, sizeof v, "%u.%u", t->version_major, t->version_minor);
    cmt_json_key(&j, "format_version");
    cmt_json_string(&j, v);
    cmt_json_key(&j, "complete");
    cmt_json_bool(&j, t->complete);
    cmt_json_key(&j, "trace_state");
    cmt_json_string(&j, t->state);
    cmt_json_key(&j, "duration_ns");
    cmt_json_uint(&j, cmt_report_rel_ns(r, t->end_ts));
    cmt_json_key(&j, "checkpoints");
    cmt_json_uint(&j, t->frag_checkpoints);
    cmt_forensics_render_json(r, &j, true);
    cmt_json_key(&j, "warnings");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < r->n_warnings; i++)
        cmt_json_string(&j, r->warnings[i]);
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}
