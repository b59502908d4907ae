/* SPDX-License-Identifier: MIT */
/* The report's "tensors" object (docs/report.md, "Tensors";
 * model/tensors_report.h): PyTorch's tensors by category at their peak, at
 * each phase's and over time, steps, growth in tensors, the tensors alive
 * at exit with the leak rule's answer, and advice with its figures. */
#include "render_parts.h"

static void key_uint(struct cmt_json *j, const char *k, uint64_t v)
{
    cmt_json_key(j, k);
    cmt_json_uint(j, v);
}

static void categories(const struct cmt_tensors_report *t, struct cmt_json *j, const char *key, const uint64_t *v,
                       bool tensors_only)
{
    cmt_json_key(j, key);
    cmt_json_begin_object(j);
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++)
        if (!tensors_only || c != CMT_CAT_RESERVE)
            key_uint(j, t->category_key[c], v[c]);
    cmt_json_end_object(j);
}

static void instant(const struct cmt_report *r, struct cmt_json *j, const char *key, const struct cmt_tensor_instant *p)
{
    const struct cmt_tensors_report *t = r->tensors;
    cmt_json_key(j, key);
    if (!p->seen) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    key_uint(j, "time_ns", cmt_report_rel_ns(r, p->ts));
    cmt_json_key(j, "phase");
    cmt_json_string(j, t->phase_name[p->phase]);
    key_uint(j, "allocated_bytes", p->allocated);
    key_uint(j, "reserved_bytes", p->reserved);
    key_uint(j, "device_bytes", p->device);
    categories(t, j, "categories", p->cats.bytes, false);
    categories(t, j, "requested", p->cats.requested, true);
    cmt_json_end_object(j);
}

static void chart(const struct cmt_report *r, struct cmt_json *j, const struct cmt_tensor_device *d)
{
    const struct cmt_tensors_report *t = r->tensors;
    cmt_json_key(j, "chart");
    if (!d->n_cells) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    key_uint(j, "origin_ns", cmt_report_rel_ns(r, d->origin_ts));
    key_uint(j, "bucket_ns", d->bucket_ns);
    key_uint(j, "buckets", d->n_cells);
    cmt_json_key(j, "time_ns");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < d->n_cells; i++)
        cmt_json_uint(j, cmt_report_rel_ns(r, d->cells[i].ts));
    cmt_json_end_array(j);
    cmt_json_key(j, "bytes");
    cmt_json_begin_object(j);
    for (unsigned c = 0; c < CMT_CAT_COUNT; c++) {
        cmt_json_key(j, t->category_key[c]);
        cmt_json_begin_array(j);
        for (size_t i = 0; i < d->n_cells; i++)
            cmt_json_uint(j, d->cells[i].bytes[c]);
        cmt_json_end_array(j);
    }
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

static void growth_verdict(struct cmt_json *j, const struct cmt_growth_verdict *v, bool per_step)
{
    cmt_json_key(j, "growing");
    cmt_json_bool(j, v->candidate);
    /* whole bytes: a leak per step is a whole number of bytes */
    key_uint(j, per_step ? "rate_bytes_per_step" : "rate_bytes_per_second",
             v->candidate && v->rate > 0 ? (uint64_t)(v->rate + 0.5) : 0);
    cmt_json_key(j, "trend");
    cmt_json_double(j, v->trend);
    key_uint(j, "samples", v->n);
    key_uint(j, "first_bytes", v->first);
    key_uint(j, "last_bytes", v->last);
}

static void site(const struct cmt_report *r, struct cmt_json *j, const struct cmt_tensor_site_row *s)
{
    const struct cmt_tensors_report *t = r->tensors;
    cmt_json_begin_object(j);
    cmt_json_key(j, "origin");
    cmt_json_string(j, t->origin_name[s->origin < CMT_ORIGIN_COUNT ? s->origin : 0]);
    key_uint(j, "live_bytes", s->live_bytes);
    key_uint(j, "live_count", s->live_count);
    key_uint(j, "live_requested_bytes", s->live_requested);
    key_uint(j, "kept_bytes", s->kept_bytes);
    key_uint(j, "kept_count", s->kept_count);
    key_uint(j, "allocations", s->allocs);
    key_uint(j, "frees", s->frees);
    cmt_json_key(j, "per_step");
    cmt_json_bool(j, s->per_step);
    growth_verdict(j, &s->verdict, s->per_step);
    cmt_json_key(j, "leak");
    cmt_json_bool(j, s->leak && !s->suppression);
    if (s->suppression)
        cmt_report_json_suppression(r, j, s->suppression);
    key_uint(j, "stack_id", s->stack);
    cmt_report_json_frames(r, j, s->stack);
    cmt_json_end_object(j);
}

static void steps(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_tensors_report *t = r->tensors;
    static const char *const sources[] = {"none", "marked", "recognised"};
    cmt_json_key(j, "steps");
    cmt_json_begin_object(j);
    cmt_json_key(j, "source");
    cmt_json_string(j, sources[t->step_source <= CMT_STEPS_RECOGNISED ? t->step_source : 0]);
    cmt_json_key(j, "rule");
    cmt_json_string(j, t->step_rule);
    key_uint(j, "count", t->steps);
    cmt_json_key(j, "at_step_ends");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_samples; i++) {
        cmt_json_begin_object(j);
        key_uint(j, "step", t->sample_step[i]);
        key_uint(j, "tensor_bytes", t->sample_total[i]);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "growth");
    cmt_json_begin_object(j);
    growth_verdict(j, &t->total_growth, true);
    cmt_json_end_object(j);
    cmt_json_end_object(j);
}

void cmt_tensors_render_json(const struct cmt_report *r, struct cmt_json *j)
{
    const struct cmt_tensors_report *t = r->tensors;
    cmt_json_key(j, "tensors");
    if (!t || !t->on) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    steps(r, j);
    cmt_json_key(j, "devices");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_devices; i++) {
        const struct cmt_tensors_device_view *v = &t->devices[i];
        const struct cmt_tensor_device *d = v->pass;
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, v->ordinal);
        instant(r, j, "peak", &d->peak);
        cmt_json_key(j, "phases");
        cmt_json_begin_object(j);
        for (unsigned k = 0; k < CMT_TPHASE_COUNT; k++)
            instant(r, j, t->phase_name[k], &d->phase_peak[k]);
        cmt_json_end_object(j);
        cmt_json_key(j, "at_exit");
        cmt_json_begin_object(j);
        categories(t, j, "categories", d->at_exit.bytes, true);
        categories(t, j, "requested", d->at_exit.requested, true);
        cmt_json_end_object(j);
        chart(r, j, d);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "growth");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_growth; i++)
        site(r, j, &t->growth[i]);
    cmt_json_end_array(j);
    cmt_json_key(j, "leaks");
    cmt_json_begin_object(j);
    key_uint(j, "work_end_time_ns", t->work_end_ts ? cmt_report_rel_ns(r, t->work_end_ts) : 0);
    key_uint(j, "bytes", t->leak_bytes);
    key_uint(j, "count", t->leak_count);
    key_uint(j, "suppressed_bytes", t->suppressed_bytes);
    key_uint(j, "suppressed_count", t->suppressed_count);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_alive; i++)
        if (t->alive[i].leak && !t->alive[i].suppression)
            site(r, j, &t->alive[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    cmt_json_key(j, "alive_at_exit");
    cmt_json_begin_object(j);
    key_uint(j, "bytes", t->alive_bytes);
    key_uint(j, "count", t->alive_count);
    cmt_json_key(j, "sites");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_alive; i++)
        if ((!t->alive[i].leak || t->alive[i].suppression) && t->alive[i].live_count)
            site(r, j, &t->alive[i]);
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    cmt_json_key(j, "advice");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < t->n_advice; i++) {
        const struct cmt_tensor_advice *a = &t->advice[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "category");
        cmt_json_string(j, t->category_key[a->category]);
        cmt_json_key(j, "device");
        cmt_json_int(j, a->device);
        key_uint(j, "bytes", a->bytes);
        cmt_json_key(j, "share");
        cmt_json_double(j, a->share);
        cmt_json_key(j, "text");
        cmt_json_string(j, a->text);
        cmt_json_key(j, "stack_id");
        cmt_json_uint(j, a->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}
