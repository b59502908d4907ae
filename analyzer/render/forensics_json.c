/* SPDX-License-Identifier: MIT */
/* The forensics in JSON: keys added to `cumemtrace report --json` and the
 * whole of `cumemtrace frag --json`. docs/fragmentation.md lists every key;
 * keys are only ever added, never renamed, within a major version. Times are
 * ns since the trace started, sizes bytes. */
#include "cuda_errors.h"
#include "blocks_report.h"
#include "forensics_report.h"
#include "report.h"
#include "render_parts.h"

static void key_uint(struct cmt_json *j, const char *k, uint64_t v)
{
    cmt_json_key(j, k);
    cmt_json_uint(j, v);
}

static void key_time(struct cmt_json *j, const struct cmt_report *r, const char *k, uint64_t ts)
{
    cmt_json_key(j, k);
    cmt_json_uint(j, cmt_report_rel_ns(r, ts));
}

static void key_string(struct cmt_json *j, const char *k, const char *v)
{
    cmt_json_key(j, k);
    cmt_json_string(j, v);
}

/* "stack_id" and "frames" of a call site, as the report's sites have them. */
static void json_site_frames(const struct cmt_report *r, struct cmt_json *j, uint64_t stack)
{
    key_uint(j, "stack_id", stack);
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    cmt_json_key(j, "frames");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *f = &sf->frames[i];
        cmt_json_begin_object(j);
        key_string(j, "function", f->function);
        key_string(j, "file", f->file);
        key_uint(j, "line", f->line > 0 ? (uint64_t)f->line : 0);
        key_string(j, "module", f->module);
        key_uint(j, "address", f->ip);
        cmt_json_key(j, "inlined");
        cmt_json_bool(j, f->inlined);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void json_holes(struct cmt_json *j, const char *k, const struct cmt_hole_stats *h)
{
    cmt_json_key(j, k);
    cmt_json_begin_object(j);
    key_uint(j, "allocations", h->allocations);
    key_uint(j, "lo", h->lo);
    key_uint(j, "hi", h->hi);
    key_uint(j, "span_bytes", cmt_holes_span_bytes(h));
    key_uint(j, "between_regions_bytes", h->between_regions);
    key_uint(j, "address_space_bytes", h->address_space);
    key_uint(j, "live_bytes", h->live_bytes);
    key_uint(j, "holes", h->count);
    key_uint(j, "free_bytes", h->total);
    key_uint(j, "largest_hole", h->largest);
    key_uint(j, "stranded_bytes", cmt_holes_stranded(h));
    key_uint(j, "padding_bytes", h->padding);
    cmt_json_key(j, "ratio");
    cmt_json_double(j, cmt_holes_ratio(h));
    cmt_json_end_object(j);
}

/* --- failed allocations --------------------------------------------------------- */

static void json_oom_case(const struct cmt_report *r, struct cmt_json *j, const struct cmt_oom_view *v, bool full)
{
    const struct cmt_oom_case *c = v->c;
    char text[1600];
    cmt_json_begin_object(j);
    key_string(j, "api", cmt_api_name(c->api));
    key_uint(j, "size", c->size);
    cmt_json_key(j, "device");
    cmt_json_int(j, c->device);
    key_time(j, r, "time_ns", c->ts);
    key_string(j, "error", cmt_cuda_error_name(c->result, cmt_api_is_driver(c->api)));
    cmt_json_key(j, "error_code");
    cmt_json_int(j, c->result);
    key_string(j, "verdict", v->verdict_name);
    key_string(j, "rule", v->rule_id);
    cmt_oom_explain(v, text, sizeof text);
    key_string(j, "explanation", text);
    cmt_oom_remedy(v, text, sizeof text);
    key_string(j, "what_to_try", text);
    key_string(j, "allocator", v->allocator_name);
    /* the allocator's own retries of this failure: the same failure */
    key_uint(j, "allocator_retries", v->retries);
    /* PyTorch's own OOM of this failure (its block layer), or null. */
    cmt_json_key(j, "allocator_oom");
    if (v->block_oom) {
        cmt_json_begin_object(j);
        key_time(j, r, "time_ns", v->block_oom->at.ts);
        key_string(j, "verdict", v->block_oom->verdict_name);
        key_uint(j, "unallocated", v->block_oom->cache_free);
        cmt_json_key(j, "expandable_segments_would_serve");
        cmt_json_bool(j, v->block_oom->expandable_would_serve);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    /* what the report's replay of the usual settings found (oom_replay.h) */
    cmt_json_key(j, "replayed");
    cmt_oom_replay_render_json(j, &v->replay, v->verdict.rule == CMT_VRULE_CACHE_FULL ||
                                                  (v->replay.uncached && v->verdict.verdict == CMT_VERDICT_CAPACITY));
    cmt_json_key(j, "figures");
    cmt_json_begin_object(j);
    key_uint(j, "request", v->fig.request);
    key_uint(j, "live", v->fig.live);
    key_uint(j, "context_allowance", v->verdict.allowance);
    key_uint(j, "unexplained", v->verdict.unexplained);
    cmt_json_key(j, "has_sample");
    cmt_json_bool(j, v->fig.has_sample);
    key_uint(j, "free", v->fig.free);
    key_uint(j, "total", v->fig.total);
    key_uint(j, "used", v->verdict.used);
    key_uint(j, "shortfall", v->verdict.shortfall);
    key_uint(j, "other_consumers", v->verdict.others);
    key_uint(j, "pool_unused", v->fig.pool_slack);
    key_uint(j, "pool_unused_other", v->fig.pool_slack_other);
    key_uint(j, "span_free", v->fig.span_free);
    key_uint(j, "largest_hole", v->fig.largest_hole);
    key_uint(j, "released_after", v->fig.released_after);
    cmt_json_key(j, "retried");
    cmt_json_bool(j, v->fig.retried);
    cmt_json_end_object(j);
    cmt_json_key(j, "live_by_kind");
    cmt_json_begin_object(j);
    for (unsigned k = 0; k < CMT_KIND_COUNT; k++)
        if (c->live_by_kind[k])
            key_uint(j, cmt_kind_name(k), c->live_by_kind[k]);
    cmt_json_end_object(j);
    json_holes(j, "span", &c->span);
    cmt_json_key(j, "sample");
    if (c->has_sample) {
        cmt_json_begin_object(j);
        key_time(j, r, "time_ns", c->sample_ts);
        key_uint(j, "free", c->free);
        key_uint(j, "total", c->total);
        key_uint(j, "pool_reserved", c->pool_reserved);
        key_uint(j, "pool_used", c->pool_used);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    cmt_json_key(j, "pools");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < c->n_pools; i++) {
        const struct cmt_oom_pool *p = &c->pools[i];
        cmt_json_begin_object(j);
        key_uint(j, "handle", p->handle);
        cmt_json_key(j, "default");
        cmt_json_bool(j, p->flags & 1);
        cmt_json_key(j, "current");
        cmt_json_bool(j, p->flags & 2);
        key_uint(j, "reserved", p->reserved);
        key_uint(j, "used", p->used);
        key_uint(j, "release_threshold", p->threshold);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "after");
    cmt_json_begin_object(j);
    key_uint(j, "released_bytes", c->released_after);
    key_uint(j, "releases", c->releases_after);
    key_uint(j, "pool_trims", c->trims_after);
    key_uint(j, "trimmed_bytes", c->trimmed_bytes);
    cmt_json_key(j, "retried");
    cmt_json_bool(j, c->retried);
    cmt_json_key(j, "retry_error_code");
    if (c->retried)
        cmt_json_int(j, c->retry_result);
    else
        cmt_json_null(j);
    cmt_json_end_object(j);
    cmt_json_key(j, "top_sites");
    cmt_json_begin_array(j);
    size_t n = full || v->n_top < r->opt->top ? v->n_top : r->opt->top;
    for (size_t i = 0; i < n; i++) {
        cmt_json_begin_object(j);
        key_uint(j, "bytes", v->top[i].bytes);
        key_uint(j, "count", v->top[i].count);
        json_site_frames(r, j, v->top[i].stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    json_site_frames(r, j, v->stack);
    cmt_json_end_object(j);
}

static void json_oom(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr, bool full)
{
    cmt_json_key(j, "oom");
    cmt_json_begin_object(j);
    key_uint(j, "failures", fr->failures_seen);
    key_uint(j, "examined", fr->n_failures);
    key_uint(j, "context_allowance", fr->allowance);
    /* one case per failure: a caching allocator's retries are its failure's
     * (allocator_retries), its probes are listed apart */
    cmt_json_key(j, "cases");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < fr->n_oom; i++)
        if (!fr->oom[i].probe && fr->oom[i].retry_of == SIZE_MAX)
            json_oom_case(r, j, &fr->oom[i], full);
    cmt_json_end_array(j);
    cmt_json_key(j, "probes");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < fr->n_oom; i++) {
        const struct cmt_oom_view *v = &fr->oom[i];
        if (!v->probe)
            continue;
        cmt_json_begin_object(j);
        key_string(j, "api", cmt_api_name(v->c->api));
        key_uint(j, "size", v->c->size);
        cmt_json_key(j, "device");
        cmt_json_int(j, v->c->device);
        key_time(j, r, "time_ns", v->c->ts);
        key_string(j, "error", cmt_cuda_error_name(v->c->result, cmt_api_is_driver(v->c->api)));
        cmt_json_key(j, "error_code");
        cmt_json_int(j, v->c->result);
        key_string(j, "allocator", v->allocator_name);
        json_site_frames(r, j, v->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

/* --- fragmentation ---------------------------------------------------------------- */

static void json_interval(const struct cmt_report *r, struct cmt_json *j, const char *k, const struct cmt_interval *v,
                          bool live_at_exit)
{
    cmt_json_key(j, k);
    cmt_json_begin_object(j);
    key_uint(j, "addr", v->addr);
    key_uint(j, "size", v->end - v->addr);
    key_time(j, r, "allocated_ns", v->ts);
    cmt_json_key(j, "live_at_exit");
    cmt_json_bool(j, live_at_exit);
    key_uint(j, "stack_id", cmt_frames_canonical(r->frames, v->stack));
    cmt_json_end_object(j);
}

static void json_point(const struct cmt_report *r, struct cmt_json *j, const struct cmt_frag_point *p)
{
    cmt_json_begin_object(j);
    key_time(j, r, "time_ns", p->ts);
    key_uint(j, "live_bytes", p->live);
    key_uint(j, "span_bytes", cmt_holes_span_bytes(&p->holes));
    key_uint(j, "holes", p->holes.count);
    key_uint(j, "free_bytes", p->holes.total);
    key_uint(j, "largest_hole", p->holes.largest);
    key_uint(j, "address_space_bytes", p->holes.address_space);
    key_uint(j, "vmm_reserved_bytes", p->vmm_reserved);
    key_uint(j, "vmm_mapped_bytes", p->vmm_mapped);
    cmt_json_key(j, "ratio");
    cmt_json_double(j, cmt_holes_ratio(&p->holes));
    cmt_json_end_object(j);
}

static void json_device_frag(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr,
                             int d)
{
    const struct cmt_device_forensics *dev = fr->devices[d];
    cmt_json_begin_object(j);
    cmt_json_key(j, "ordinal");
    cmt_json_int(j, d);
    key_uint(j, "checkpoints", dev->point_series.n);
    key_uint(j, "device_bytes", dev->device_bytes);
    cmt_json_key(j, "worst");
    if (dev->worst.valid) {
        const struct cmt_frag_worst *w = &dev->worst;
        cmt_json_begin_object(j);
        key_time(j, r, "time_ns", w->point.ts);
        key_uint(j, "live_bytes", w->point.live);
        json_holes(j, "holes", &w->point.holes);
        cmt_json_key(j, "largest_holes");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < w->n_top; i++) {
            const struct cmt_hole_view *h = &w->top[i];
            cmt_json_begin_object(j);
            key_uint(j, "addr", h->addr);
            key_uint(j, "size", h->size);
            json_interval(r, j, "left", &h->left, h->left_live_at_exit);
            json_interval(r, j, "right", &h->right, h->right_live_at_exit);
            cmt_json_key(j, "opened_by_stack_id");
            if (h->left.opener)
                cmt_json_uint(j, cmt_frames_canonical(r->frames, h->left.opener));
            else
                cmt_json_null(j);
            if (h->left.opener)
                key_time(j, r, "opened_ns", h->left.opened_ts);
            cmt_json_end_object(j);
        }
        cmt_json_end_array(j);
        cmt_json_key(j, "pinning_sites");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < fr->n_pins[d]; i++) {
            const struct cmt_pin_view *p = &fr->pins[d][i];
            cmt_json_begin_object(j);
            key_uint(j, "hole_bytes", p->pinned_bytes);
            key_uint(j, "holes", p->holes);
            key_uint(j, "allocations", p->allocations);
            key_time(j, r, "oldest_allocated_ns", p->oldest_ts);
            json_site_frames(r, j, p->stack);
            cmt_json_end_object(j);
        }
        cmt_json_end_array(j);
        cmt_json_end_object(j);
    } else {
        cmt_json_null(j);
    }
    cmt_json_key(j, "at_exit");
    json_point(r, j, &dev->last_point);
    cmt_json_key(j, "waste");
    cmt_json_begin_object(j);
    key_uint(j, "pitch_peak_bytes", dev->pitch_waste_peak);
    key_time(j, r, "pitch_peak_ns", dev->pitch_waste_peak_ts);
    key_uint(j, "rounding_peak_bytes", dev->round_waste_peak);
    key_time(j, r, "rounding_peak_ns", dev->round_waste_peak_ts);
    cmt_json_end_object(j);
    /* Stream-ordered bytes handed out, every pool of the device: known at
     * every event, where a pool's reserve is known at its samples only. */
    key_uint(j, "async_peak_bytes", dev->async_peak);
    key_time(j, r, "async_peak_ns", dev->async_peak_ts);
    cmt_json_key(j, "series");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < dev->point_series.n; i++)
        json_point(r, j, &dev->points[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void json_frag(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr)
{
    cmt_json_key(j, "fragmentation");
    cmt_json_begin_object(j);
    cmt_json_key(j, "tracked_releases");
    cmt_json_bool(j, fr->track_holes);
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (int d = 0; d < CMT_MAX_DEVICES; d++)
        if (fr->devices[d] && fr->devices[d]->point_series.n)
            json_device_frag(r, j, fr, d);
    cmt_json_end_array(j);
    cmt_json_key(j, "holes_opened_by");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < fr->n_openers; i++) {
        const struct cmt_opener_view *o = &fr->openers[i];
        cmt_json_begin_object(j);
        key_uint(j, "releases", o->count);
        key_uint(j, "largest_hole", o->largest);
        key_uint(j, "hole_bytes", o->bytes);
        json_site_frames(r, j, o->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

/* --- waste, churn, pools, samples ------------------------------------------------------ */

static void json_waste(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr, bool full)
{
    cmt_json_key(j, "waste");
    cmt_json_begin_object(j);
    key_uint(j, "pitch_bytes", fr->pitch_waste_total);
    key_uint(j, "rounding_bytes", fr->round_waste_total);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    size_t n = full || fr->n_waste < r->opt->top ? fr->n_waste : r->opt->top;
    for (size_t i = 0; i < n; i++) {
        const struct cmt_waste_view *w = &fr->waste[i];
        cmt_json_begin_object(j);
        key_uint(j, "pitch_bytes", w->pitch_bytes);
        key_uint(j, "pitch_allocations", w->pitch_count);
        key_uint(j, "rounding_bytes", w->round_bytes);
        json_site_frames(r, j, w->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

static void json_churn(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr, bool full)
{
    cmt_json_key(j, "churn");
    cmt_json_begin_array(j);
    size_t n = full || fr->n_churn < r->opt->top ? fr->n_churn : r->opt->top;
    for (size_t i = 0; i < n; i++) {
        const struct cmt_churn_view *v = &fr->churn[i];
        cmt_json_begin_object(j);
        key_uint(j, "distinct_sizes", v->row.distinct);
        cmt_json_key(j, "at_least");
        cmt_json_bool(j, v->row.saturated);
        key_uint(j, "allocations", v->row.allocs);
        key_uint(j, "released", v->row.frees);
        key_uint(j, "bytes", v->row.alloc_bytes);
        key_uint(j, "min_size", v->row.min_size);
        key_uint(j, "max_size", v->row.max_size);
        key_uint(j, "mean_lifetime_ns", v->row.frees ? v->row.lifetime_ns / v->row.frees : 0);
        key_string(j, "pattern", v->pattern == CMT_CHURN_SHORT_LIVED ? "short-lived" : "kept");
        key_string(j, "allocator", v->allocator_name);
        key_uint(j, "call_paths", v->row.paths);
        key_string(j, "what_to_try", cmt_render_pytorch_cache_off(r, v->row.key) ? CMT_PYTORCH_CACHE_OFF_REMEDY
                                     : v->allocator != CMT_ALLOCATOR_NONE ? v->allocator_remedy
                                     : v->pattern == CMT_CHURN_SHORT_LIVED
                                         ? "reuse buffers, round sizes to a few classes, or allocate from a "
                                           "stream-ordered pool (cudaMallocAsync)"
                                         : "");
        json_site_frames(r, j, v->row.key);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void json_pools(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr, bool full)
{
    cmt_json_key(j, "pools");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < fr->n_pools; i++) {
        const struct cmt_pool_info *p = &fr->pools[i];
        cmt_json_begin_object(j);
        key_uint(j, "handle", p->handle);
        cmt_json_key(j, "device");
        cmt_json_int(j, p->device);
        cmt_json_key(j, "default");
        cmt_json_bool(j, p->is_default);
        cmt_json_key(j, "created_in_trace");
        cmt_json_bool(j, p->created_in_trace);
        if (p->created_in_trace) {
            key_string(j, "create_api", cmt_api_name(p->create_api));
            key_time(j, r, "created_ns", p->create_ts);
            key_uint(j, "max_size", p->max_size);
            cmt_json_key(j, "created_by");
            cmt_json_begin_object(j);
            json_site_frames(r, j, cmt_frames_canonical(r->frames, p->create_stack));
            cmt_json_end_object(j);
        }
        cmt_json_key(j, "destroyed");
        cmt_json_bool(j, p->destroyed);
        if (p->destroyed)
            key_time(j, r, "destroyed_ns", p->destroy_ts);
        key_uint(j, "release_threshold", p->threshold);
        key_uint(j, "reserved_bytes", p->reserved);
        key_uint(j, "used_bytes", p->used);
        key_uint(j, "peak_reserved_bytes", p->peak_reserved);
        key_time(j, r, "peak_reserved_ns", p->peak_reserved_ts);
        key_uint(j, "peak_unused_bytes", p->peak_slack);
        key_time(j, r, "peak_unused_ns", p->peak_slack_ts);
        key_uint(j, "trims", p->trims);
        key_uint(j, "states", p->states);
        if (full) {
            cmt_json_key(j, "series");
            cmt_json_begin_array(j);
            for (size_t k = 0; k < p->pool_series.n; k++) {
                cmt_json_begin_object(j);
                key_time(j, r, "time_ns", p->series[k].ts);
                key_uint(j, "reserved", p->series[k].reserved);
                key_uint(j, "used", p->series[k].used);
                cmt_json_end_object(j);
            }
            cmt_json_end_array(j);
        }
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

static void json_sample(const struct cmt_report *r, struct cmt_json *j, const struct cmt_sample_point *s)
{
    cmt_json_begin_object(j);
    key_string(j, "why", cmt_api_name(s->api) + 7);
    key_time(j, r, "time_ns", s->ts);
    key_uint(j, "free", s->free);
    key_uint(j, "total", s->total);
    key_uint(j, "used", s->total > s->free ? s->total - s->free : 0);
    key_uint(j, "live", s->live);
    key_uint(j, "pool_unused", cmt_sample_pool_unused(s));
    key_uint(j, "unexplained", cmt_sample_gap(s));
    key_uint(j, "pool_reserved", s->pool_reserved);
    key_uint(j, "pool_used", s->pool_used);
    cmt_json_end_object(j);
}

static void json_samples(const struct cmt_report *r, struct cmt_json *j, const struct cmt_forensics_report *fr, bool full)
{
    cmt_json_key(j, "device_samples");
    cmt_json_begin_array(j);
    for (int d = 0; d < CMT_MAX_DEVICES; d++) {
        const struct cmt_device_forensics *dev = fr->devices[d];
        if (!dev || !dev->n_samples)
            continue;
        cmt_json_begin_object(j);
        cmt_json_key(j, "ordinal");
        cmt_json_int(j, d);
        key_uint(j, "samples", dev->n_samples);
        cmt_json_key(j, "first");
        json_sample(r, j, &dev->first_sample);
        cmt_json_key(j, "largest_unexplained");
        json_sample(r, j, &dev->max_gap_sample);
        cmt_json_key(j, "last");
        json_sample(r, j, &dev->last_sample);
        if (full) {
            cmt_json_key(j, "series");
            cmt_json_begin_array(j);
            for (size_t i = 0; i < dev->sample_series.n; i++)
                json_sample(r, j, &dev->samples[i]);
            cmt_json_end_array(j);
        }
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
}

void cmt_forensics_render_json(const struct cmt_report *r, struct cmt_json *j, bool full)
{
    const struct cmt_forensics_report *fr = r->forensics;
    if (!fr)
        return;
    json_oom(r, j, fr, full);
    json_frag(r, j, fr);
    json_waste(r, j, fr, full);
    json_churn(r, j, fr, full);
    json_pools(r, j, fr, full);
    json_samples(r, j, fr, full);
}
