/* SPDX-License-Identifier: MIT */
/* The report's memory shared with other processes, in `report --json`: the
 * key "ipc", present when the trace holds IPC records (docs/report.md). */
#include <stdio.h>

#include "cuda_errors.h"
#include "json_writer.h"
#include "render_parts.h"
#include "report.h"

static void fingerprint(struct cmt_json *j, uint64_t fp)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%016llx", (unsigned long long)fp);
    cmt_json_key(j, "handle");
    if (fp)
        cmt_json_string(j, buf);
    else
        cmt_json_null(j);
}

static void key_uint(struct cmt_json *j, const char *key, uint64_t v)
{
    cmt_json_key(j, key);
    cmt_json_uint(j, v);
}

void cmt_ipc_render_json(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_ipc_report *x = &r->ipc;
    if (!x->any)
        return;
    cmt_json_key(j, "ipc");
    cmt_json_begin_object(j);
    key_uint(j, "mapped_peak_bytes", x->peak_bytes);
    key_uint(j, "mapped_peak_time_ns", x->peak_bytes ? cmt_report_rel_ns(r, x->peak_ts) : 0);
    key_uint(j, "opened_bytes", x->opened_bytes);
    key_uint(j, "opened_count", x->opened_count);
    key_uint(j, "never_closed_bytes", x->open_bytes);
    key_uint(j, "never_closed_count", x->open_count);
    key_uint(j, "unknown_size_count", x->unsized_count);
    key_uint(j, "failed_opens", x->failed_opens);
    key_uint(j, "failed_imports", x->failed_imports);
    key_uint(j, "failed_closes", x->failed_closes);
    key_uint(j, "unmatched_closes", x->unmatched_closes);
    key_uint(j, "failed_exports", x->failed_exports);
    key_uint(j, "imported_handles", x->vmm_imported);
    key_uint(j, "imported_handles_released", x->vmm_released);
    cmt_json_key(j, "mapped");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < x->n_sites; i++) {
        const struct cmt_ipc_site *s = &x->sites[i];
        cmt_json_begin_object(j);
        key_uint(j, "bytes", s->bytes);
        key_uint(j, "count", s->count);
        key_uint(j, "never_closed_bytes", s->open_bytes);
        key_uint(j, "never_closed_count", s->open_count);
        key_uint(j, "unknown_size_count", s->unsized_count);
        cmt_json_key(j, "closed");
        cmt_json_bool(j, s->open_count == 0);
        cmt_json_key(j, "api");
        cmt_json_string(j, s->api == CMT_API_CU_MEM_MAP ? "cuMemMap" : cmt_api_name(s->api));
        cmt_json_key(j, "device");
        cmt_json_int(j, s->device);
        fingerprint(j, s->fingerprint);
        key_uint(j, "first_time_ns", cmt_report_rel_ns(r, s->first_ts));
        key_uint(j, "stack_id", s->stack);
        cmt_report_json_frames(r, j, s->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "exported");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < x->n_exports; i++) {
        const struct cmt_ipc_export_row *e = &x->exports[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "api");
        cmt_json_string(j, cmt_api_name(e->api));
        key_uint(j, "time_ns", cmt_report_rel_ns(r, e->ts));
        cmt_json_key(j, "device");
        cmt_json_int(j, e->device);
        fingerprint(j, e->fingerprint);
        cmt_json_key(j, "allocation_found");
        cmt_json_bool(j, e->found);
        key_uint(j, "bytes", e->bytes);
        key_uint(j, "offset", e->offset);
        key_uint(j, "stack_id", e->found ? e->alloc_stack : e->stack);
        cmt_report_json_frames(r, j, e->found ? e->alloc_stack : e->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}
