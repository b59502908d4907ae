/* SPDX-License-Identifier: MIT */
/* `cumemtrace report --json`: one JSON object. docs/report.md lists every key;
 * keys are only ever added, never renamed, within a major version. */
#include <stdio.h>

#include "blocks_report.h"
#include "cuda_errors.h"
#include "forensics_report.h"
#include "job.h"
#include "phases_report.h"
#include "json_writer.h"
#include "report.h"
#include "render_parts.h"

static void json_site(const struct cmt_report *r, struct cmt_json *j, const struct cmt_site_row *s, bool leak)
{
    bool with_kind = leak;
    cmt_json_begin_object(j);
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, s->bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, s->count);
    if (with_kind) {
        cmt_json_key(j, "kind");
        cmt_json_string(j, cmt_kind_name(s->kind));
    }
    cmt_json_key(j, "api");
    cmt_json_string(j, cmt_api_name(s->api));
    if (leak) {
        cmt_json_key(j, "pattern");
        cmt_json_string(j, s->site_allocs <= 1 ? "once" : "repeated");
        cmt_json_key(j, "site_allocations");
        cmt_json_uint(j, s->site_allocs);
        cmt_json_key(j, "site_frees");
        cmt_json_uint(j, s->site_frees);
        cmt_json_key(j, "growing");
        cmt_json_bool(j, s->growing);
    }
    if (cmt_ipc_exported(&r->ipc, s->stack)) {
        cmt_json_key(j, "exported");
        cmt_json_bool(j, true);
    }
    cmt_json_key(j, "stack_id");
    cmt_json_uint(j, s->stack);
    cmt_report_json_frames(r, j, s->stack);
    if (s->suppression)
        cmt_report_json_suppression(r, j, s->suppression);
    cmt_json_end_object(j);
}

/* A call tree as a flat list in depth-first order (parents before their
 * children): deep stacks nest nothing. Children below the threshold are
 * summed into their parent's hidden_* fields. */
struct json_tree_walk {
    const struct cmt_call_tree *t;
    struct cmt_json *j;
    uint64_t threshold;
    uint32_t next_id;
};

static void json_tree_node(struct json_tree_walk *w, uint32_t index, int64_t parent, uint32_t depth)
{
    const struct cmt_tree_node *n = &w->t->nodes[index];
    struct cmt_json *j = w->j;
    uint32_t id = w->next_id++;
    uint64_t hidden = 0, hidden_count = 0, hidden_paths = 0;
    for (uint32_t c = n->first_child; c != CMT_TREE_NONE; c = w->t->nodes[c].next_sibling) {
        const struct cmt_tree_node *k = &w->t->nodes[c];
        if (k->inclusive < w->threshold) {
            hidden += k->inclusive;
            hidden_count += k->inclusive_count;
            hidden_paths++;
        }
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "id");
    cmt_json_uint(j, id);
    cmt_json_key(j, "parent");
    if (parent < 0)
        cmt_json_null(j);
    else
        cmt_json_uint(j, (uint64_t)parent);
    cmt_json_key(j, "depth");
    cmt_json_uint(j, depth);
    const struct cmt_frame *f = n->frame;
    cmt_json_key(j, "function");
    cmt_json_string(j, f ? f->function : NULL);
    cmt_json_key(j, "file");
    cmt_json_string(j, f ? f->file : NULL);
    cmt_json_key(j, "lines");
    cmt_json_begin_array(j);
    for (unsigned i = 0; i < n->n_lines; i++)
        cmt_json_uint(j, n->lines[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "module");
    cmt_json_string(j, f ? f->module : NULL);
    cmt_json_key(j, "address");
    if (f)
        cmt_json_uint(j, f->ip);
    else
        cmt_json_null(j);
    cmt_json_key(j, "inlined");
    cmt_json_bool(j, f && f->inlined);
    cmt_json_key(j, "inclusive_bytes");
    cmt_json_uint(j, n->inclusive);
    cmt_json_key(j, "inclusive_count");
    cmt_json_uint(j, n->inclusive_count);
    cmt_json_key(j, "self_bytes");
    cmt_json_uint(j, n->self);
    cmt_json_key(j, "self_count");
    cmt_json_uint(j, n->self_count);
    cmt_json_key(j, "hidden_bytes");
    cmt_json_uint(j, hidden);
    cmt_json_key(j, "hidden_count");
    cmt_json_uint(j, hidden_count);
    cmt_json_key(j, "hidden_paths");
    cmt_json_uint(j, hidden_paths);
    cmt_json_end_object(j);
    for (uint32_t c = n->first_child; c != CMT_TREE_NONE; c = w->t->nodes[c].next_sibling)
        if (w->t->nodes[c].inclusive >= w->threshold)
            json_tree_node(w, c, id, depth + 1);
}

static void json_tree(const struct cmt_report *r, struct cmt_json *j, const char *key, const struct cmt_call_tree *t)
{
    cmt_json_key(j, key);
    cmt_json_begin_object(j);
    uint64_t total = t->n ? t->nodes[0].inclusive : 0;
    double pct = r->opt->tree_min_percent;
    uint64_t threshold = pct > 0 ? (uint64_t)((double)total * pct / 100.0) : 0;
    if (threshold == 0)
        threshold = 1;
    cmt_json_key(j, "total_bytes");
    cmt_json_uint(j, total);
    cmt_json_key(j, "min_percent");
    cmt_json_double(j, pct);
    cmt_json_key(j, "nodes");
    cmt_json_begin_array(j);
    if (t->n) {
        struct json_tree_walk w = {.t = t, .j = j, .threshold = threshold};
        json_tree_node(&w, 0, -1, 0);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void json_by_kind(struct cmt_json *j, const char *key, const uint64_t *by_kind)
{
    cmt_json_key(j, key);
    cmt_json_begin_object(j);
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
        if (by_kind[k]) {
            cmt_json_key(j, cmt_kind_name(k));
            cmt_json_uint(j, by_kind[k]);
        }
    cmt_json_end_object(j);
}

/* The JOB record: who the process was in a job (null without one). */
static void json_job(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_report_trace *t = &r->trace;
    cmt_json_key(j, "job");
    if (!t->has_job) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "launcher");
    cmt_json_string(j, cmt_job_source_key((unsigned)t->job_source));
    cmt_json_key(j, "job_id");
    cmt_json_string(j, t->job_id);
    cmt_json_key(j, "rank");
    cmt_json_int(j, t->job_rank);
    cmt_json_key(j, "local_rank");
    cmt_json_int(j, t->job_local_rank);
    cmt_json_key(j, "world_size");
    cmt_json_int(j, t->job_world_size);
    cmt_json_key(j, "local_world_size");
    cmt_json_int(j, t->job_local_world_size);
    cmt_json_key(j, "variables");
    cmt_json_begin_object(j);
    for (size_t i = 0; i < t->job_nvars; i++) {
        cmt_json_key(j, t->job_vars[i].name);
        cmt_json_string(j, t->job_vars[i].value);
    }
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void json_process(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_report_trace *t = &r->trace;
    cmt_json_key(j, "process");
    cmt_json_begin_object(j);
    cmt_json_key(j, "pid");
    cmt_json_uint(j, t->pid);
    cmt_json_key(j, "ppid");
    cmt_json_uint(j, t->ppid);
    cmt_json_key(j, "executable");
    cmt_json_string(j, t->exe);
    cmt_json_key(j, "argv");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->argc; i++)
        cmt_json_string(j, t->argv[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "hostname");
    cmt_json_string(j, t->hostname);
    cmt_json_key(j, "rank");
    cmt_json_int(j, t->rank);
    cmt_json_key(j, "cwd");
    cmt_json_string(j, t->cwd);
    cmt_json_end_object(j);
}

/* Device accounts where something besides the program held memory: the
 * peak by holder and each holder's own peak. */
static void json_holders(const struct cmt_report *r, struct cmt_json *j, const struct cmt_account_view *v)
{
    bool any = false;
    for (unsigned h = 1; h < CMT_HOLDER_DEVICE_COUNT; h++)
        any = any || v->peak_by_holder[h] || (v->has_own_peaks && v->own_peak[h].bytes);
    if (v->fig.cls != CMT_CLASS_DEVICE || !any)
        return;
    cmt_json_key(j, "peak_by_holder");
    cmt_json_begin_object(j);
    for (unsigned h = 0; h < CMT_HOLDER_DEVICE_COUNT; h++) {
        cmt_json_key(j, r->holder_key[h]);
        cmt_json_uint(j, v->peak_by_holder[h]);
    }
    cmt_json_end_object(j);
    if (!v->has_own_peaks)
        return;
    cmt_json_key(j, "own_peaks");
    cmt_json_begin_object(j);
    for (unsigned h = 1; h < CMT_HOLDER_DEVICE_COUNT; h++) {
        const struct cmt_holder_peak *p = &v->own_peak[h];
        cmt_json_key(j, r->holder_key[h]);
        cmt_json_begin_object(j);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, p->bytes);
        cmt_json_key(j, "count");
        cmt_json_uint(j, p->count);
        cmt_json_key(j, "time_ns");
        if (p->bytes)
            cmt_json_uint(j, cmt_report_rel_ns(r, p->ts));
        else
            cmt_json_null(j);
        cmt_json_end_object(j);
    }
    cmt_json_end_object(j);
}

static void json_account(const struct cmt_report *r, struct cmt_json *j, const struct cmt_account_view *v)
{
    const struct cmt_account_figures *acc = &v->fig;
    cmt_json_begin_object(j);
    if (acc->cls != CMT_CLASS_HOST) {
        cmt_json_key(j, "ordinal");
        cmt_json_int(j, acc->device);
    }
    cmt_json_key(j, "peak_bytes");
    cmt_json_uint(j, acc->peak);
    cmt_json_key(j, "peak_time_ns");
    cmt_json_uint(j, cmt_report_rel_ns(r, acc->peak_ts));
    cmt_json_key(j, "peak_allocations");
    cmt_json_uint(j, acc->peak_count);
    cmt_phases_json_peak(r, v, j);
    if (acc->cls != CMT_CLASS_MANAGED) {
        cmt_json_key(j, "peak_by_kind");
        cmt_json_begin_object(j);
        for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
            if (acc->peak_by_kind[k]) {
                cmt_json_key(j, cmt_kind_name(k));
                cmt_json_uint(j, acc->peak_by_kind[k]);
            }
        cmt_json_end_object(j);
    }
    json_holders(r, j, v);
    cmt_json_key(j, "live_at_exit_bytes");
    cmt_json_uint(j, acc->live);
    cmt_json_key(j, "live_at_exit_count");
    cmt_json_uint(j, acc->live_count);
    cmt_json_key(j, "sites_at_peak");
    cmt_json_uint(j, v->n_sites_at_peak);
    cmt_json_key(j, "top_sites_at_peak");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < v->n_top; i++)
        json_site(r, j, &v->top[i], false);
    cmt_json_end_array(j);
    json_tree(r, j, "peak_call_tree", &v->peak.tree);
    if (v->has_at) {
        cmt_json_key(j, "at");
        cmt_json_begin_object(j);
        cmt_json_key(j, "time_ns");
        cmt_json_uint(j, r->opt->at_ns);
        cmt_json_key(j, "live_bytes");
        cmt_json_uint(j, v->at.bytes);
        cmt_json_key(j, "live_allocations");
        cmt_json_uint(j, v->at.count);
        if (acc->cls != CMT_CLASS_MANAGED)
            json_by_kind(j, "by_kind", v->at.by_kind);
        cmt_json_key(j, "sites");
        cmt_json_uint(j, v->at.n_rows);
        cmt_json_key(j, "top_sites");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < v->at.n_top; i++)
            json_site(r, j, &v->at.rows[i], false);
        cmt_json_end_array(j);
        json_tree(r, j, "call_tree", &v->at.tree);
        cmt_json_end_object(j);
    }
    cmt_json_end_object(j);
}

static void json_accounts(const struct cmt_report *r, struct cmt_json *j, unsigned cls, const char *key)
{
    cmt_json_key(j, key);
    cmt_json_begin_array(j);
    for (size_t i = 0; i < r->n_accounts; i++)
        if (r->accounts[i].fig.cls == cls)
            json_account(r, j, &r->accounts[i]);
    cmt_json_end_array(j);
}

/* One object per device with VMM activity; ordinal -1 holds host-located
 * physical memory. Reserved ranges and mappings are address space; physical
 * bytes are also in the device's (or pinned host's) account. */
static void json_virtual(const struct cmt_report *r, struct cmt_json *j)
{
    cmt_json_key(j, "vmm");
    cmt_json_begin_array(j);
    for (int d = 0; d <= CMT_MAX_DEVICES; d++) {
        const struct cmt_virtual_stats *v = &r->trace.virt[d];
        if (!v->physical_peak && !v->reserve_peak && !v->map_peak)
            continue;
        cmt_json_begin_object(j);
        cmt_json_key(j, "ordinal");
        cmt_json_int(j, d - 1);
        cmt_json_key(j, "reserved_peak_bytes");
        cmt_json_uint(j, v->reserve_peak);
        cmt_json_key(j, "reserved_at_exit_bytes");
        cmt_json_uint(j, v->reserve_live);
        cmt_json_key(j, "reserved_at_exit_count");
        cmt_json_uint(j, v->reserve_count);
        cmt_json_key(j, "mapped_peak_bytes");
        cmt_json_uint(j, v->map_peak);
        cmt_json_key(j, "mapped_at_exit_bytes");
        cmt_json_uint(j, v->map_live);
        cmt_json_key(j, "mapped_at_exit_count");
        cmt_json_uint(j, v->map_count);
        cmt_json_key(j, "physical_peak_bytes");
        cmt_json_uint(j, v->physical_peak);
        cmt_json_key(j, "physical_at_exit_bytes");
        cmt_json_uint(j, v->physical_live);
        cmt_json_key(j, "physical_at_exit_count");
        cmt_json_uint(j, v->physical_count);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

/* What caching allocators held at exit (present when any did). */
static void json_held(const struct cmt_report *r, struct cmt_json *j)
{
    if (!r->n_held)
        return;
    cmt_json_key(j, "held_at_exit");
    cmt_json_begin_array(j);
    for (unsigned h = 1; h < CMT_HOLDER_COUNT; h++) {
        bool rows = false;
        for (size_t i = 0; i < r->n_held && !rows; i++)
            rows = r->held[i].holder == h;
        if (!rows)
            continue;
        cmt_json_begin_object(j);
        cmt_json_key(j, "holder");
        cmt_json_string(j, r->holder_name[h]);
        cmt_json_key(j, "bytes");
        cmt_json_uint(j, r->held_bytes[h]);
        cmt_json_key(j, "segments");
        cmt_json_uint(j, r->held_count[h]);
        /* With PyTorch's block layer the tensors inside are recorded: the
         * advice to switch the cache off to see them no longer applies. */
        bool tensors = h == CMT_HOLDER_PYTORCH && r->blocks && r->blocks->on;
        cmt_json_key(j, "tensors_recorded");
        cmt_json_bool(j, tensors);
        cmt_json_key(j, "advice");
        cmt_json_string(j, tensors ? cmt_holder_tensors_advice() : cmt_holder_cache_advice(h));
        cmt_json_key(j, "sites");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < r->n_held; i++)
            if (r->held[i].holder == h)
                json_site(r, j, &r->held[i], true);
        cmt_json_end_array(j);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void json_leaks(const struct cmt_report *r, struct cmt_json *j)
{
    json_held(r, j);
    cmt_json_key(j, "leaks");
    cmt_json_begin_object(j);
    /* What "live at the end" means here: only "exit" makes these leaks. */
    cmt_json_key(j, "basis");
    cmt_json_string(j, cmt_live_basis_key(r->trace.live_basis));
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, r->leak_bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, r->leak_count);
    cmt_json_key(j, "by_kind");
    cmt_json_begin_object(j);
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
        if (r->leak_bytes_by_kind[k]) {
            cmt_json_key(j, cmt_kind_name(k));
            cmt_json_uint(j, r->leak_bytes_by_kind[k]);
        }
    cmt_json_end_object(j);
    cmt_json_key(j, "once");
    cmt_json_begin_object(j);
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, r->leak_once_bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, r->leak_once_count);
    cmt_json_end_object(j);
    cmt_json_key(j, "repeated");
    cmt_json_begin_object(j);
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, r->leak_repeated_bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, r->leak_repeated_count);
    cmt_json_end_object(j);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < r->n_leaks; i++)
        json_site(r, j, &r->leaks[i], true);
    cmt_json_end_array(j);
    /* live at exit but suppressed, as `check` suppresses: not in the figures above */
    cmt_json_key(j, "suppressed");
    cmt_json_begin_object(j);
    cmt_json_key(j, "bytes");
    cmt_json_uint(j, r->suppressed_bytes);
    cmt_json_key(j, "count");
    cmt_json_uint(j, r->suppressed_count);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < r->n_suppressed; i++)
        json_site(r, j, &r->suppressed[i], true);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void json_growth(const struct cmt_report *r, struct cmt_json *j)
{
    cmt_json_key(j, "growth");
    cmt_json_begin_object(j);
    cmt_json_key(j, "checkpoints");
    cmt_json_uint(j, r->trace.growth_checkpoints);
    cmt_json_key(j, "checkpoint_interval_ns");
    cmt_json_uint(j, r->trace.growth_interval_ns);
    cmt_json_key(j, "candidates");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < r->n_growth; i++) {
        const struct cmt_growth_row *g = &r->growth[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "rate_bytes_per_second");
        cmt_json_double(j, g->verdict.rate);
        cmt_json_key(j, "trend");
        cmt_json_double(j, g->verdict.trend);
        cmt_json_key(j, "samples");
        cmt_json_uint(j, g->verdict.n);
        cmt_json_key(j, "first_sample_bytes");
        cmt_json_uint(j, g->verdict.first);
        cmt_json_key(j, "last_sample_bytes");
        cmt_json_uint(j, g->verdict.last);
        cmt_json_key(j, "live_bytes");
        cmt_json_uint(j, g->live_bytes);
        cmt_json_key(j, "live_count");
        cmt_json_uint(j, g->live_count);
        cmt_json_key(j, "allocations");
        cmt_json_uint(j, g->allocs);
        cmt_json_key(j, "frees");
        cmt_json_uint(j, g->frees);
        cmt_json_key(j, "failures");
        cmt_json_uint(j, g->failures);
        cmt_json_key(j, "first_time_ns");
        cmt_json_uint(j, cmt_report_rel_ns(r, g->first_ts));
        cmt_json_key(j, "kind");
        cmt_json_string(j, cmt_kind_name(g->kind));
        cmt_json_key(j, "api");
        cmt_json_string(j, cmt_api_name(g->api));
        cmt_json_key(j, "stack_id");
        cmt_json_uint(j, g->stack);
        cmt_report_json_frames(r, j, g->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void json_failures(const struct cmt_report *r, struct cmt_json *j)
{
    cmt_json_key(j, "failed_count");
    cmt_json_uint(j, r->trace.failed_allocs);
    cmt_json_key(j, "failed_calls_probing");
    cmt_json_uint(j, r->failed_calls_probing);
    cmt_json_key(j, "failed_calls_retrying");
    cmt_json_uint(j, r->failed_calls_retrying);
    cmt_json_key(j, "failed");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < r->n_failures; i++) {
        const struct cmt_failure_group *g = &r->failures[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "api");
        cmt_json_string(j, cmt_api_name(g->api));
        cmt_json_key(j, "size");
        cmt_json_uint(j, g->min_size);
        cmt_json_key(j, "max_size");
        cmt_json_uint(j, g->max_size);
        cmt_json_key(j, "count");
        cmt_json_uint(j, g->count);
        cmt_json_key(j, "error");
        cmt_json_string(j, cmt_cuda_error_name(g->result, cmt_api_is_driver(g->api)));
        cmt_json_key(j, "error_code");
        cmt_json_int(j, g->result);
        cmt_json_key(j, "device");
        cmt_json_int(j, g->device);
        cmt_json_key(j, "time_ns");
        cmt_json_uint(j, cmt_report_rel_ns(r, g->first_ts));
        cmt_json_key(j, "live_device_bytes");
        cmt_json_uint(j, g->live_device_bytes);
        const struct cmt_oom_view *v = cmt_forensics_report_failure(r->forensics, g->first_index);
        /* a caching allocator's own retries (the same failure) and probes (no failure) */
        cmt_json_key(j, "allocator_retries");
        cmt_json_uint(j, g->retries);
        cmt_json_key(j, "probe");
        cmt_json_bool(j, g->probes == g->count);
        cmt_json_key(j, "verdict");
        if (g->probes == g->count)
            cmt_json_string(j, "allocator-probe");
        else if (v)
            cmt_json_string(j, v->verdict_name);
        else
            cmt_json_null(j);
        cmt_phases_json_failure(r, g->first_index, j);
        cmt_json_key(j, "stack_id");
        cmt_json_uint(j, g->stack);
        cmt_report_json_frames(r, j, g->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

void cmt_report_render_json(const struct cmt_report *r, FILE *out)
{
    struct cmt_json j;
    cmt_json_init(&j, out, true);
    cmt_report_render_json_value(r, &j);
    cmt_json_finish(&j);
}

/* The writer's notes: each {"source", "time_ns", "text"}. */
static void json_notes(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_report_trace *t = &r->trace;
    cmt_json_key(j, "notes");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_notes; i++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "source");
        cmt_json_string(j, t->notes[i].source);
        cmt_json_key(j, "time_ns");
        cmt_json_uint(j, cmt_report_rel_ns(r, t->notes[i].ts));
        cmt_json_key(j, "text");
        cmt_json_string(j, t->notes[i].text);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "notes_not_shown");
    cmt_json_uint(j, t->notes_dropped);
}

/* The report as JSON; for the HTML page (page), only what the page shows:
 * its model is embedded whole, and the usage views (allocation calls per
 * call site with their frames, threads) are not drawn there but were more
 * than half of a 10-million-event page (5.3 of 9.2 MB). */
static void render_value(const struct cmt_report *r, struct cmt_json *j, bool page)
{
    const struct cmt_report_trace *t = &r->trace;
    cmt_json_begin_object(j);
    cmt_json_key(j, "trace");
    cmt_json_string(j, t->path);
    cmt_json_key(j, "format_version");
    char v[32];
    snprintf(v, sizeof v, "%u.%u", t->version_major, t->version_minor);
    cmt_json_string(j, v);
    json_process(r, j);
    json_job(r, j);
    cmt_json_key(j, "complete");
    cmt_json_bool(j, t->complete);
    cmt_json_key(j, "trace_state");
    cmt_json_string(j, t->state);
    cmt_json_key(j, "damage");
    cmt_json_string(j, t->damaged ? t->message : NULL);
    cmt_json_key(j, "clean_exit");
    cmt_json_bool(j, t->clean_exit);
    cmt_json_key(j, "exit_status");
    if (r->exit_status >= 0)
        cmt_json_int(j, r->exit_status);
    else
        cmt_json_null(j);
    cmt_json_key(j, "in_progress");
    cmt_json_bool(j, t->in_progress);
    cmt_json_key(j, "start_realtime_ns");
    cmt_json_uint(j, t->start_realtime_ns);
    cmt_json_key(j, "duration_ns");
    cmt_json_uint(j, cmt_report_rel_ns(r, t->end_ts));
    cmt_json_key(j, "at_time_ns");
    if (r->at)
        cmt_json_uint(j, r->opt->at_ns);
    else
        cmt_json_null(j);
    cmt_json_key(j, "events");
    cmt_json_uint(j, t->events);
    cmt_json_key(j, "events_by_api");
    cmt_json_begin_object(j);
    for (unsigned api = 1; api < 256; api++)
        if (t->events_by_api[api]) {
            cmt_json_key(j, cmt_api_name(api));
            cmt_json_uint(j, t->events_by_api[api]);
        }
    cmt_json_end_object(j);
    cmt_json_key(j, "events_dropped");
    cmt_json_uint(j, t->events_dropped);
    cmt_json_key(j, "unrecorded");
    cmt_json_begin_object(j);
    cmt_json_key(j, "total");
    cmt_json_uint(j, t->events_dropped + t->unrecorded_nested);
    cmt_json_key(j, "after_recording_stopped");
    cmt_json_uint(j, t->events_dropped);
    cmt_json_key(j, "nested_calls");
    cmt_json_uint(j, t->unrecorded_nested);
    cmt_json_end_object(j);
    cmt_json_key(j, "unmatched_frees");
    cmt_json_uint(j, t->unmatched_frees);
    json_notes(r, j);
    cmt_tensors_render_json(r, j);
    json_accounts(r, j, CMT_CLASS_DEVICE, "devices");
    json_accounts(r, j, CMT_CLASS_MANAGED, "managed");
    json_accounts(r, j, CMT_CLASS_HOST, "pinned_host");
    json_virtual(r, j);
    cmt_ipc_render_json(r, j);
    json_leaks(r, j);
    json_growth(r, j);
    if (!page)
        cmt_usage_render_json(r, j);
    json_failures(r, j);
    cmt_blocks_render_json(r, j);
    cmt_json_key(j, "whatif");
    if (r->whatif)
        cmt_whatif_render_json_value(r->whatif, j);
    else
        cmt_json_null(j);
    if (page)
        cmt_phases_render_page_json(r, j);
    else
        cmt_phases_render_json(r, j);
    cmt_forensics_render_json(r, j, false);
    cmt_json_key(j, "warnings");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < r->n_warnings; i++)
        cmt_json_string(j, r->warnings[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

void cmt_report_render_json_value(const struct cmt_report *r, struct cmt_json *j)
{
    render_value(r, j, false);
}

void cmt_report_render_page_value(const struct cmt_report *r, struct cmt_json *j)
{
    render_value(r, j, true);
}
