/* SPDX-License-Identifier: MIT */
/* What every JSON section writes of a call site: its "frames" and
 * "site_frame", and the "suppression" that set it aside (report_json.c and
 * the sections beside it: blocks, tensors, IPC, usage, diff, check). */
#include "json_writer.h"
#include "render_parts.h"

void cmt_json_frame(struct cmt_json *j, const struct cmt_frame *f)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "function");
    cmt_json_string(j, f->function);
    cmt_json_key(j, "file");
    cmt_json_string(j, f->file);
    cmt_json_key(j, "line");
    cmt_json_uint(j, f->line > 0 ? (uint64_t)f->line : 0);
    cmt_json_key(j, "module");
    cmt_json_string(j, f->module);
    cmt_json_key(j, "address");
    cmt_json_uint(j, f->ip);
    cmt_json_key(j, "inlined");
    cmt_json_bool(j, f->inlined);
    cmt_json_end_object(j);
}

void cmt_report_json_frames(const struct cmt_report *r, struct cmt_json *j, uint64_t stack)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    cmt_json_key(j, "frames");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < sf->n; i++)
        cmt_json_frame(j, &sf->frames[i]);
    cmt_json_end_array(j);
    /* the frame that names the call site (frames.h) */
    cmt_json_key(j, "site_frame");
    if (sf->site < sf->n)
        cmt_json_uint(j, sf->site);
    else
        cmt_json_null(j);
}

void cmt_report_json_suppression(const struct cmt_report *r, struct cmt_json *j, uint32_t suppression)
{
    cmt_json_key(j, "suppression");
    if (suppression == 0 || suppression > r->n_suppressions) {
        cmt_json_null(j);
        return;
    }
    const struct cmt_report_suppression *x = &r->suppressions[suppression - 1];
    cmt_json_begin_object(j);
    cmt_json_key(j, "pattern");
    cmt_json_string(j, x->pattern);
    cmt_json_key(j, "source");
    cmt_json_string(j, x->source);
    cmt_json_key(j, "line");
    cmt_json_uint(j, x->line);
    cmt_json_key(j, "reason");
    cmt_json_string(j, x->reason && x->reason[0] ? x->reason : NULL);
    cmt_json_key(j, "default");
    cmt_json_bool(j, x->is_default);
    cmt_json_end_object(j);
}
