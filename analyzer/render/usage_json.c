/* SPDX-License-Identifier: MIT */
/* Allocation calls, short-lived allocations and threads in the report's JSON
 * (docs/report.md, "JSON of report"). */
#include "json_writer.h"
#include "render_parts.h"

static void key_uint(struct cmt_json *j, const char *k, uint64_t v)
{
    cmt_json_key(j, k);
    cmt_json_uint(j, v);
}

void cmt_usage_render_json(const struct cmt_report *r, struct cmt_json *j)
{
    if (!r->has_usage)
        return;
    const struct cmt_calls_view *v = &r->calls;
    cmt_json_key(j, "allocation_calls");
    cmt_json_begin_object(j);
    key_uint(j, "calls", v->calls);
    key_uint(j, "short_lived", v->short_lived);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < v->n; i++) {
        const struct cmt_calls_row *row = &v->rows[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "api");
        cmt_json_string(j, cmt_api_name(row->api));
        key_uint(j, "calls", row->calls);
        key_uint(j, "bytes", row->alloc_bytes);
        key_uint(j, "short_lived", row->short_lived);
        key_uint(j, "short_lived_bytes", row->short_bytes);
        key_uint(j, "short_lived_ns", row->short_life_ns);
        key_uint(j, "stack_id", row->stack);
        cmt_report_json_frames(r, j, row->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    const struct cmt_threads_view *t = &r->threads;
    cmt_json_key(j, "threads");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n; i++) {
        const struct cmt_thread_use_row *u = &t->rows[i].use;
        cmt_json_begin_object(j);
        key_uint(j, "tid", u->tid);
        cmt_json_key(j, "name");
        cmt_json_string(j, t->rows[i].name);
        key_uint(j, "peak_bytes", u->peak);
        key_uint(j, "peak_count", u->peak_count);
        key_uint(j, "peak_ns", u->peak ? cmt_report_rel_ns(r, u->peak_ts) : 0);
        key_uint(j, "live_bytes", u->live);
        key_uint(j, "live_count", u->live_count);
        key_uint(j, "allocations", u->allocs);
        key_uint(j, "allocated_bytes", u->alloc_bytes);
        key_uint(j, "released_by_other_threads", u->frees_by_others);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}
