/* SPDX-License-Identifier: MIT */
/* `cumemtrace check --format json`: one object; docs/check.md lists every
 * key. Keys are only ever added within a major version. */
#include <stdio.h>

#include "blocks_report.h"
#include "check.h"
#include "json_writer.h"
#include "render_parts.h"

static void json_opt_uint(struct cmt_json *j, const char *key, bool has, uint64_t v)
{
    cmt_json_key(j, key);
    if (has)
        cmt_json_uint(j, v);
    else
        cmt_json_null(j);
}

static void json_location(const struct cmt_check *c, const struct cmt_check_trace *t, struct cmt_json *j,
                          const struct cmt_finding *f)
{
    cmt_json_key(j, "location");
    const struct cmt_stack_frames *sf = cmt_frames_get(t->report.frames, f->stack);
    const struct cmt_frame *at = f->site ? cmt_check_location_frame(sf) : NULL;
    if (!at && f->site && sf->n)
        at = &sf->frames[0];
    if (!at) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    char path[PATH_MAX];
    cmt_json_key(j, "file");
    if (at->file)
        cmt_check_path(c, at->file, path, sizeof path);
    cmt_json_string(j, at->file ? path : NULL);
    cmt_json_key(j, "line");
    cmt_json_uint(j, at->line > 0 ? (uint64_t)at->line : 0);
    cmt_json_key(j, "function");
    cmt_json_string(j, at->function);
    cmt_json_key(j, "module");
    cmt_json_string(j, at->module);
    cmt_json_end_object(j);
}

static void json_finding(const struct cmt_check *c, const struct cmt_check_trace *t, struct cmt_json *j,
                         const struct cmt_finding *f)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "rule");
    cmt_json_string(j, cmt_rule_id(f->rule));
    cmt_json_key(j, "level");
    cmt_json_string(j, f->level == CMT_LEVEL_ERROR ? "error" : "warning");
    cmt_json_key(j, "message");
    cmt_json_string(j, f->message);
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, f->bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, f->count);
    cmt_json_key(j, "api");
    cmt_json_string(j, f->rule == CMT_RULE_PEAK || f->rule == CMT_RULE_PEAK_GROWTH || !f->site
                           ? NULL
                           : cmt_api_name(f->api));
    cmt_json_key(j, "device");
    if (f->device >= 0)
        cmt_json_int(j, f->device);
    else
        cmt_json_null(j);
    json_opt_uint(j, "limit", f->has_limit, f->limit);
    json_opt_uint(j, "baseline_bytes", f->has_baseline, f->baseline_bytes);
    json_opt_uint(j, "baseline_count", f->has_baseline && f->rule != CMT_RULE_PEAK_GROWTH, f->baseline_count);
    char fp[24];
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)f->fingerprint);
    cmt_json_key(j, "fingerprint");
    cmt_json_string(j, fp);
    json_location(c, t, j, f);
    cmt_json_key(j, "frames");
    cmt_json_begin_array(j);
    const struct cmt_stack_frames *sf = cmt_frames_get(t->report.frames, f->stack);
    for (size_t i = 0; f->site && i < sf->n; i++)
        cmt_json_frame(j, &sf->frames[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static const char *status_word(enum cmt_trace_status s)
{
    return s == CMT_TRACE_PASS ? "pass" : s == CMT_TRACE_FAIL ? "fail" : "error";
}

static void json_trace(const struct cmt_check *c, const struct cmt_check_trace *t, struct cmt_json *j)
{
    cmt_json_begin_object(j);
    cmt_json_key(j, "trace");
    cmt_json_string(j, t->path);
    cmt_json_key(j, "name");
    cmt_json_string(j, t->name);
    cmt_json_key(j, "status");
    cmt_json_string(j, status_word(t->status));
    cmt_json_key(j, "error");
    cmt_json_string(j, t->error[0] ? t->error : NULL);
    cmt_json_key(j, "complete");
    cmt_json_bool(j, t->opened && t->complete);
    cmt_json_key(j, "trace_state");
    cmt_json_string(j, t->opened ? t->report.trace.state : NULL);
    cmt_json_key(j, "in_progress");
    cmt_json_bool(j, t->opened && t->report.trace.in_progress);
    cmt_json_key(j, "leaks_checked");
    cmt_json_bool(j, t->opened && t->leaks_checked);
    cmt_json_key(j, "violations");
    cmt_json_uint(j, t->n_errors);
    if (t->opened) {
        const struct cmt_report *r = &t->report;
        cmt_json_key(j, "process");
        cmt_json_begin_object(j);
        cmt_json_key(j, "pid");
        cmt_json_uint(j, r->trace.pid);
        cmt_json_key(j, "argv");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < r->trace.argc; i++)
            cmt_json_string(j, r->trace.argv[i]);
        cmt_json_end_array(j);
        cmt_json_end_object(j);
        cmt_json_key(j, "leaks");
        cmt_json_begin_object(j);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, r->leak_bytes);
        cmt_json_key(j, "count");
        cmt_json_uint(j, r->leak_count);
        cmt_json_key(j, "tensor_bytes"); /* PyTorch's block layer: tensors never released, unsuppressed */
        cmt_json_uint(j, t->tensor_leak_bytes);
        cmt_json_key(j, "tensor_count");
        cmt_json_uint(j, t->tensor_leak_count);
        cmt_json_key(j, "tensor_suppressed_bytes");
        cmt_json_uint(j, t->tensor_suppressed_bytes);
        cmt_json_key(j, "tensor_suppressed_count");
        cmt_json_uint(j, t->tensor_suppressed_count);
        cmt_json_key(j, "tensor_alive_bytes");
        cmt_json_uint(j, t->tensor_alive_bytes);
        cmt_json_key(j, "tensor_alive_count");
        cmt_json_uint(j, t->tensor_alive_count);
        cmt_json_key(j, "suppressed_bytes");
        cmt_json_uint(j, r->suppressed_bytes);
        cmt_json_key(j, "suppressed_count");
        cmt_json_uint(j, r->suppressed_count);
        cmt_json_end_object(j);
        cmt_json_key(j, "devices");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < r->n_accounts; i++) {
            const struct cmt_account_figures *acc = &r->accounts[i].fig;
            if (acc->cls != CMT_CLASS_DEVICE)
                continue;
            cmt_json_begin_object(j);
            cmt_json_key(j, "ordinal");
            cmt_json_int(j, acc->device);
            cmt_json_key(j, "peak_bytes");
            cmt_json_uint(j, acc->peak);
            cmt_json_key(j, "live_at_exit_bytes");
            cmt_json_uint(j, acc->live);
            cmt_json_end_object(j);
        }
        cmt_json_end_array(j);
        cmt_json_key(j, "failed_allocations");
        cmt_json_uint(j, r->trace.failed_allocs);
    }
    cmt_json_key(j, "findings");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_findings; i++)
        json_finding(c, t, j, &t->findings[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "notes");
    cmt_json_begin_array(j);
    if (t->opened)
        for (size_t i = 0; i < t->report.n_warnings; i++)
            cmt_json_string(j, t->report.warnings[i]);
    for (size_t i = 0; i < t->n_notes; i++)
        cmt_json_string(j, t->notes[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void json_limits(const struct cmt_check *c, struct cmt_json *j)
{
    const struct cmt_check_options *o = c->opt;
    cmt_json_key(j, "limits");
    cmt_json_begin_object(j);
    json_opt_uint(j, "max_leak_bytes", o->has_max_leak_bytes, o->max_leak_bytes);
    json_opt_uint(j, "max_leak_count", o->has_max_leak_count, o->max_leak_count);
    cmt_json_key(j, "max_peak");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < o->n_peak_limits; i++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        if (o->peak_limits[i].device >= 0)
            cmt_json_int(j, o->peak_limits[i].device);
        else
            cmt_json_null(j);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, o->peak_limits[i].bytes);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "failed_allocations");
    cmt_json_string(j, o->failed_allocations == CMT_FAILED_ALL    ? "all"
                       : o->failed_allocations == CMT_FAILED_NONE ? "none"
                                                                  : "fatal");
    cmt_json_key(j, "no_failed_allocations"); /* deprecated: true when "all" (--no-failed-allocations) */
    cmt_json_bool(j, o->failed_allocations == CMT_FAILED_ALL);
    cmt_json_key(j, "baselines");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < o->n_baselines; i++)
        cmt_json_string(j, o->baselines[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "max_peak_growth_percent");
    if (o->has_max_peak_growth)
        cmt_json_double(j, o->max_peak_growth);
    else
        cmt_json_null(j);
    cmt_json_end_object(j);
}

static void json_program(const struct cmt_check *c, struct cmt_json *j)
{
    const struct cmt_check_program *p = c->program;
    if (!p)
        return;
    cmt_json_key(j, "program");
    cmt_json_begin_object(j);
    cmt_json_key(j, "argv");
    cmt_json_begin_array(j);
    for (int i = 0; i < p->argc; i++)
        cmt_json_string(j, p->argv[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "exit_status");
    if (p->exited)
        cmt_json_int(j, p->exit_status);
    else
        cmt_json_null(j);
    cmt_json_key(j, "signal");
    if (!p->exited && p->signal)
        cmt_json_int(j, p->signal);
    else
        cmt_json_null(j);
    cmt_json_key(j, "status_passed_through");
    cmt_json_bool(j, p->status_passed_through);
    cmt_json_end_object(j);
}

void cmt_check_render_json(const struct cmt_check *c, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_json_begin_object(&j);
    int status = cmt_check_status(c);
    cmt_json_key(&j, "status");
    cmt_json_string(&j, c->n_fail ? "fail" : c->n_error ? "error" : "pass");
    cmt_json_key(&j, "check_exit_status");
    cmt_json_int(&j, status);
    cmt_json_key(&j, "exit_status");
    cmt_json_int(&j, c->program ? c->program->final_status : status);
    json_program(c, &j);
    json_limits(c, &j);
    cmt_json_key(&j, "summary");
    cmt_json_begin_object(&j);
    cmt_json_key(&j, "traces");
    cmt_json_uint(&j, c->n_traces);
    cmt_json_key(&j, "passed");
    cmt_json_uint(&j, c->n_pass);
    cmt_json_key(&j, "failed");
    cmt_json_uint(&j, c->n_fail);
    cmt_json_key(&j, "errors");
    cmt_json_uint(&j, c->n_error);
    cmt_json_end_object(&j);
    cmt_json_key(&j, "traces");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < c->n_traces; i++)
        json_trace(c, c->traces[i], &j);
    cmt_json_end_array(&j);
    cmt_json_key(&j, "suppressions");
    cmt_json_begin_array(&j);
    for (size_t i = 0; i < c->suppressions.n; i++) {
        const struct cmt_suppression *x = &c->suppressions.items[i];
        cmt_json_begin_object(&j);
        cmt_json_key(&j, "pattern");
        cmt_json_string(&j, x->pattern);
        cmt_json_key(&j, "source");
        cmt_json_string(&j, x->source);
        cmt_json_key(&j, "line");
        cmt_json_uint(&j, x->line);
        cmt_json_key(&j, "default");
        cmt_json_bool(&j, x->is_default);
        cmt_json_key(&j, "allocations");
        cmt_json_uint(&j, x->allocations);
        cmt_json_key(&j, "bytes");
        cmt_json_uint(&j, x->bytes);
        cmt_json_end_object(&j);
    }
    cmt_json_end_array(&j);
    cmt_json_end_object(&j);
    cmt_json_finish(&j);
}
