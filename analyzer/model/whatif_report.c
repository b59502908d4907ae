/* SPDX-License-Identifier: MIT */
#include "whatif_report.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory_holder.h"
#include "report.h"

size_t cmt_whatif_candidates(struct cmt_ta_settings *out, size_t max)
{
    static const char *const texts[] = {"",
                                        "expandable_segments:True",
                                        "max_split_size_mb:128",
                                        "max_split_size_mb:512",
                                        "roundup_power2_divisions:4",
                                        "garbage_collection_threshold:0.6"};
    size_t n = 0;
    char err[160];
    for (size_t i = 0; i < sizeof texts / sizeof texts[0] && n < max; i++)
        if (cmt_ta_settings_parse(texts[i], &out[n], err, sizeof err) == 0)
            n++;
    return n;
}

static void describe_site(struct cmt_frames *frames, uint64_t stack, char *buf, size_t len)
{
    buf[0] = '\0';
    if (!frames || !stack)
        return;
    const struct cmt_stack_frames *sf = cmt_frames_get(frames, stack);
    const struct cmt_frame *fr = cmt_stack_site(sf);
    if (!fr && sf->n)
        fr = &sf->frames[0];
    if (fr)
        cmt_frame_describe(fr, buf, len);
}

static void build_failure(struct cmt_whatif_failure_view *v, const struct cmt_whatif_failure *f,
                          const struct cmt_analysis *a, struct cmt_frames *frames, const struct cmt_phases_view *phases)
{
    const struct cmt_ta_failure *t = &f->f;
    v->time_ns = f->ts > a->info.start_monotonic_ns ? f->ts - a->info.start_monotonic_ns : 0;
    v->request = t->request;
    v->rounded = t->rounded;
    v->allocated = t->allocated;
    v->reserved = t->reserved;
    v->limit = t->limit;
    v->cache_free = t->reserved > t->allocated ? t->reserved - t->allocated : 0;
    v->recorded_failed = f->recorded_failed;
    if (t->by_fraction) {
        v->verdict = "fraction";
    } else if (t->limit != UINT64_MAX && t->allocated + t->rounded > t->limit) {
        v->verdict = "capacity";
        v->short_by = t->allocated + t->rounded - t->limit;
    } else {
        v->verdict = "fragmentation";
    }
    v->stack = frames && f->stack ? cmt_frames_canonical(frames, f->stack) : f->stack;
    describe_site(frames, f->stack, v->site, sizeof v->site);
    if (phases && f->has_where)
        cmt_phases_view_where_text(phases, &f->where, v->phase, sizeof v->phase);
}

static void build_row(struct cmt_whatif_row *row, const struct cmt_whatif *w, const struct cmt_whatif_device *d,
                      size_t i, const struct cmt_analysis *a, struct cmt_frames *frames,
                      const struct cmt_phases_view *phases)
{
    const struct cmt_ta_settings *s = &w->settings[i];
    const struct cmt_whatif_run *run = &d->run[cmt_whatif_same(w, i)];
    row->label = cmt_ta_settings_label(s);
    row->text = s->text;
    row->recorded = i == 0;
    row->asked = i > 0;
    row->gc_inert = cmt_ta_settings_gc_inert(s) && !d->fraction_inferred;
    row->bounded = d->capacity != 0 || d->fraction_inferred || s->fraction_set;
    const struct cmt_ta_stats *st = run->stats;
    if (st) {
        row->peak_reserved = st->peak_reserved;
        row->peak_allocated = st->peak_allocated;
        row->peak_reserved_ns =
            st->peak_reserved_ts > a->info.start_monotonic_ns ? st->peak_reserved_ts - a->info.start_monotonic_ns : 0;
        row->allocated_at_peak = st->allocated_at_peak;
        for (unsigned c = 0; c < CMT_TA_CLASS_COUNT; c++) {
            row->reserved_at_peak[c] = st->at_peak[c].reserved;
            row->unallocated_at_peak[c] = st->at_peak[c].reserved - st->at_peak[c].allocated;
        }
        row->segments_made = st->segments_made;
        row->segments_released = st->segments_released;
        row->maps = st->maps;
        row->mapped_bytes = st->mapped_bytes;
        row->unmaps = st->unmaps;
        row->unmapped_bytes = st->unmapped_bytes;
        row->expandable_segments = st->expandable_segments;
        row->requests = st->requests;
        row->served_from_cache = st->served_from_cache;
        row->retries = st->retries;
        row->released_for_retry_bytes = st->released_for_retry_bytes;
        row->gc_released_bytes = st->gc_released_bytes;
        row->empty_cache_released_bytes = st->empty_cache_released_bytes;
    }
    row->served_recorded_failures = run->served_recorded_failures;
    row->failures = run->failures;
    row->fits = run->failures == 0;
    row->replay_peak_reserved = row->peak_reserved;
    row->replay_peak_allocated = row->peak_allocated;
    if (run->has_failure) {
        build_failure(&row->first, &run->first, a, frames, phases);
        row->peak_reserved = run->peak_reserved_at_failure;
        row->peak_allocated = run->peak_allocated_at_failure;
    }
    row->min_headroom = run->min_headroom;
    row->min_headroom_ns = run->min_headroom_ts > a->info.start_monotonic_ns
                               ? run->min_headroom_ts - a->info.start_monotonic_ns
                               : 0;
    row->vs_recorded = (int64_t)row->peak_reserved - (int64_t)d->recorded_peak;
}

static void recorded_figures(struct cmt_whatif_device_view *v, const struct cmt_whatif_device *d,
                             const struct cmt_analysis *a, const struct cmt_whatif *w)
{
    v->recorded_peak_reserved = d->recorded_peak;
    v->recorded_peak_allocated = d->recorded_peak; /* cache off: every byte reserved is a tensor's */
    if (w->source != CMT_WHATIF_BLOCKS || !a->blocks)
        return;
    for (size_t k = 0; k < a->blocks->n_devices; k++)
        if (a->blocks->devices[k].ordinal == d->ordinal) {
            v->recorded_peak_reserved = a->blocks->devices[k].peak_reserved;
            v->recorded_peak_allocated = a->blocks->devices[k].peak_allocated;
        }
}

static size_t best_row(const struct cmt_whatif_device_view *v)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < v->n_rows; i++) {
        const struct cmt_whatif_row *r = &v->rows[i];
        if (r->fits && (best == SIZE_MAX || r->peak_reserved < v->rows[best].peak_reserved))
            best = i;
    }
    return best;
}

/* The cache holding what stack allocated: the report's, kept per stack,
 * or decided over frames. */
static enum cmt_holder cache_of(struct cmt_report *report, struct cmt_frames *frames, uint64_t stack)
{
    return report ? cmt_report_cache(report, stack) : cmt_cache_of(frames, stack);
}

static const char *reason_none(const struct cmt_analysis *a, struct cmt_frames *frames, struct cmt_report *report,
                               char *buf, size_t len)
{
    size_t segments = 0;
    for (size_t i = 0; frames && i < a->replay.n_active; i++)
        if (cache_of(report, frames, a->replay.active_sites[i]) == CMT_HOLDER_PYTORCH)
            segments++;
    if (a->model.has_allocator && a->model.allocator.state != 0)
        snprintf(buf, len, "whatif needs PyTorch's block layer (its tensors inside the cache's segments), and the "
                           "shim could not record it for this run: a NOTE of the report says why");
    else if (a->model.has_allocator && a->blocks && a->blocks->seen)
        snprintf(buf, len, "PyTorch's block layer was on but recorded no tensor request to replay (it attaches at the "
                           "cache's first segment: a run that failed at its first request leaves none)");
    else if (segments)
        snprintf(buf, len, "whatif needs PyTorch's block layer (its tensors inside the cache's segments): this trace "
                           "has the cache's segments only (recorded with CUMEMTRACE_BLOCKS=0, or by a shim before "
                           "the block layer); record the program again with cumemtrace run, CUMEMTRACE_BLOCKS unset "
                           "(the block layer is on by default for PyTorch 2.11)");
    else
        snprintf(buf, len, "whatif needs PyTorch's block layer: this trace has none, and no allocation PyTorch made "
                           "with its cache off (PYTORCH_NO_CUDA_MEMORY_CACHING=1) to replay instead; it replays "
                           "PyTorch's caching allocator only, so a program's own cudaMalloc calls have nothing to "
                           "replay; a PyTorch program recorded with cumemtrace run has the block layer by default");
    return buf;
}

bool cmt_whatif_pytorch_seen(const struct cmt_analysis *a, struct cmt_frames *frames, struct cmt_report *report)
{
    if (a->model.has_allocator)
        return true;
    for (size_t i = 0; frames && i < a->replay.n_active; i++)
        if (cache_of(report, frames, a->replay.active_sites[i]) == CMT_HOLDER_PYTORCH)
            return true;
    return false;
}

int cmt_whatif_report_build(struct cmt_whatif_report *out, const struct cmt_analysis *a, const struct cmt_whatif *w,
                            struct cmt_frames *frames, const struct cmt_phases_view *phases,
                            struct cmt_report *report)
{
    memset(out, 0, sizeof *out);
    out->path = a->path;
    out->source = "none";
    for (unsigned c = 0; c < CMT_TA_CLASS_COUNT; c++) {
        out->class_key[c] = cmt_ta_class_key((enum cmt_ta_class)c);
        out->class_name[c] = cmt_ta_class_name((enum cmt_ta_class)c);
    }
    const struct cmt_trace_model *m = &a->model;
    out->version = m->has_allocator ? cmt_model_string(m, m->allocator.version_id) : "";
    if (!w || w->source == CMT_WHATIF_NONE || !w->n_devices) {
        reason_none(a, frames, report, out->reason, sizeof out->reason);
        return 0;
    }
    out->source = w->source == CMT_WHATIF_BLOCKS ? "blocks" : "uncached";
    out->assumes = w->source == CMT_WHATIF_UNCACHED ? CMT_WHATIF_UNCACHED_ASSUMES : NULL;
    out->settings_known = w->recorded_known;
    out->settings_inferred = w->recorded_inferred;
    out->settings_unparsed = w->recorded_unparsed;
    out->settings_variable = w->recorded_variable;
    snprintf(out->settings_text, sizeof out->settings_text, "%s", w->recorded_text);
    snprintf(out->settings_error, sizeof out->settings_error, "%s", w->recorded_error);
    out->capacity_asked = w->capacity;
    out->empty_caches = w->empty_caches_inferred;
    out->devices_dropped = w->devices_dropped;
    out->devices = calloc(w->n_devices, sizeof *out->devices);
    if (!out->devices)
        return -1;
    for (size_t k = 0; k < w->n_devices; k++) {
        const struct cmt_whatif_device *d = &w->devices[k];
        struct cmt_whatif_device_view *v = &out->devices[out->n_devices++];
        v->ordinal = d->ordinal;
        v->name = d->ordinal >= 0 && d->ordinal < CMT_MODEL_MAX_DEVICES && m->has_device[d->ordinal]
                      ? cmt_model_string(m, m->device[d->ordinal].name_id)
                      : "";
        v->total = d->total;
        v->capacity = d->capacity;
        v->outside_max = d->outside_max;
        v->context_max = d->context_max;
        v->others_max = d->others_max;
        v->min_room = d->min_limit;
        v->requests = d->requests;
        v->releases = d->releases;
        v->recorded_ooms = d->recorded_ooms;
        v->digest = d->digest;
        v->streams = d->n_streams;
        v->fraction_inferred = d->fraction_inferred;
        v->allowed = d->allowed;
        recorded_figures(v, d, a, w);
        v->rows = calloc(w->n_settings, sizeof *v->rows);
        if (!v->rows)
            return -1;
        /* a setting equal to one before it is that row, asked for too */
        size_t row_of[CMT_WHATIF_MAX_SETTINGS];
        for (size_t i = 0; i < w->n_settings; i++) {
            size_t same = cmt_whatif_same(w, i);
            if (same != i) {
                v->rows[row_of[same]].asked = true;
                continue;
            }
            row_of[i] = v->n_rows;
            build_row(&v->rows[v->n_rows++], w, d, i, a, frames, phases);
        }
        for (size_t i = 0; i < v->n_rows; i++)
            v->rows[i].vs_recorded = (int64_t)v->rows[i].peak_reserved - (int64_t)v->recorded_peak_reserved;
        v->best = best_row(v);
        v->exact = v->n_rows && v->rows[0].peak_reserved == v->recorded_peak_reserved &&
                   (w->source != CMT_WHATIF_BLOCKS || v->rows[0].peak_allocated == v->recorded_peak_allocated);
    }
    return 0;
}

void cmt_whatif_report_free(struct cmt_whatif_report *x)
{
    for (size_t k = 0; k < x->n_devices; k++)
        free(x->devices[k].rows);
    free(x->devices);
    memset(x, 0, sizeof *x);
}
