/* SPDX-License-Identifier: MIT */
#include "cmt_version.h"
#include "render_parts.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"
#include "job_report.h"
#include "json_writer.h"

struct cmt_html_report {
    FILE *out;
    FILE *mem; /* the model, as it is written */
    char *buf;
    size_t len;
    struct cmt_json j;
    bool traces_closed; /* the model's "traces" array is closed, other members follow */
};

/* The one-file HTML report (docs/html.md): the page built at build time
 * from analyzer/render/html (libraries and page.js inlined) around a model,
 * one JSON object: per trace its report (as `report --json`), its timeline
 * (every bucket's lowest, highest and last live bytes per series) and its
 * call sites' floors per growth checkpoint (what each held throughout an
 * interval). The model is collected in memory and written at the end with
 * every '<' escaped, so no string from the trace can end the script
 * element that holds it. */

/* analyzer/render/html, inlined by embed_html.py at build time */
extern const char cmt_html_head[];
extern const char cmt_html_tail[];

static int html_begin(struct cmt_html_report *h, FILE *out, const char *version)
{
    *h = (struct cmt_html_report){.out = out};
    h->mem = open_memstream(&h->buf, &h->len);
    if (!h->mem)
        return -errno;
    cmt_json_init(&h->j, h->mem, false);
    cmt_json_begin_object(&h->j);
    cmt_json_key(&h->j, "cumemtrace_html");
    cmt_json_uint(&h->j, 1);
    cmt_json_key(&h->j, "version");
    cmt_json_string(&h->j, version);
    cmt_json_key(&h->j, "traces");
    cmt_json_begin_array(&h->j);
    return 0;
}

static void uint_array(struct cmt_json *j, const char *key, const uint64_t *v, size_t n, size_t stride)
{
    cmt_json_key(j, key);
    cmt_json_begin_array(j);
    for (size_t i = 0; i < n; i++)
        cmt_json_uint(j, v[i * stride]);
    cmt_json_end_array(j);
}

/* The timeline as the model holds it: at most CMT_TIMELINE_BUCKETS
 * buckets, each with every series' lowest, highest and last live bytes. */
static void json_timeline(struct cmt_json *j, const struct cmt_report *r)
{
    const struct cmt_timeline_model *v = &r->timeline;
    cmt_json_key(j, "timeline");
    if (v->n == 0) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "origin_ns");
    cmt_json_uint(j, cmt_report_rel_ns(r, v->origin));
    cmt_json_key(j, "bucket_ns");
    cmt_json_uint(j, v->width);
    cmt_json_key(j, "buckets");
    cmt_json_uint(j, v->n);
    cmt_json_key(j, "end_ns");
    cmt_json_uint(j, cmt_report_rel_ns(r, v->end));
    uint_array(j, "allocs", &v->counts[0].allocs, v->n, sizeof v->counts[0] / sizeof(uint64_t));
    uint_array(j, "frees", &v->counts[0].frees, v->n, sizeof v->counts[0] / sizeof(uint64_t));
    uint_array(j, "failures", &v->counts[0].failures, v->n, sizeof v->counts[0] / sizeof(uint64_t));
    cmt_json_key(j, "series");
    cmt_json_begin_array(j);
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_model_series *ts = &v->series[s];
        const struct cmt_timeline_cell *c = ts->cells;
        const size_t stride = sizeof *c / sizeof(uint64_t);
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, ts->device);
        /* by kind; the block and job layers add series of their own */
        cmt_json_key(j, "layer");
        cmt_json_string(j, "kind");
        cmt_json_key(j, "name");
        cmt_json_string(j, ts->name);
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, ts->peak);
        cmt_json_key(j, "peak_time_ns");
        cmt_json_uint(j, ts->peak ? cmt_report_rel_ns(r, ts->peak_ts) : 0);
        cmt_json_key(j, "live_at_end_bytes");
        cmt_json_uint(j, ts->live);
        uint_array(j, "min", &c->min, v->n, stride);
        uint_array(j, "max", &c->max, v->n, stride);
        uint_array(j, "last", &c->last, v->n, stride);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

/* The call sites' floors per growth checkpoint interval, as the model
 * holds them (site_floors.h): what each held throughout an interval. */
static void json_sites(struct cmt_json *j, const struct cmt_report *r)
{
    const struct cmt_site_floors *f = &r->floors;
    cmt_json_key(j, "sites");
    if (!f->n) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "origin_ns");
    cmt_json_uint(j, f->started ? cmt_report_rel_ns(r, f->origin_ts) : 0);
    cmt_json_key(j, "interval_ns");
    cmt_json_uint(j, f->interval_ns);
    cmt_json_key(j, "intervals");
    cmt_json_uint(j, f->n);
    cmt_json_key(j, "by_holder");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < f->n_by_holder; i++) {
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, f->by_holder[i].device);
        cmt_json_key(j, "holder");
        cmt_json_string(j, f->by_holder[i].holder_key);
        uint_array(j, "floor", f->by_holder[i].floor, f->n, 1);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_key(j, "list");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < f->n_sites; i++) {
        const struct cmt_floor_site *st = &f->sites[i];
        cmt_json_begin_object(j);
        cmt_json_key(j, "stack_id");
        cmt_json_uint(j, st->stack);
        /* the device of its home account (the first it counted in) */
        cmt_json_key(j, "device");
        cmt_json_int(j, st->device);
        cmt_json_key(j, "kind");
        cmt_json_string(j, st->kind);
        uint_array(j, "floor", st->floor, f->n, 1);
        cmt_report_json_frames(r, j, st->stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
}

/* The stream-ordered pools per device over time, as the driver's device
 * samples recorded them (report_events.h): reserved and used at each sample;
 * only the devices whose pools ever reserved memory, null when none did. */
static void json_pools(struct cmt_json *j, const struct cmt_report *r)
{
    cmt_json_key(j, "pools");
    bool any = false;
    for (size_t d = 0; d < r->events.n_devices; d++) {
        const struct cmt_report_device_samples *ds = &r->events.devices[d];
        bool has = false;
        for (size_t i = 0; i < ds->n && !has; i++)
            has = ds->samples[i].pool_reserved != 0;
        if (!has)
            continue;
        if (!any)
            cmt_json_begin_array(j);
        any = true;
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, ds->device);
        cmt_json_key(j, "time_ns");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < ds->n; i++)
            cmt_json_uint(j, cmt_report_rel_ns(r, ds->samples[i].ts));
        cmt_json_end_array(j);
        cmt_json_key(j, "reserved");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < ds->n; i++)
            cmt_json_uint(j, ds->samples[i].pool_reserved);
        cmt_json_end_array(j);
        cmt_json_key(j, "used");
        cmt_json_begin_array(j);
        for (size_t i = 0; i < ds->n; i++)
            cmt_json_uint(j, ds->samples[i].pool_used);
        cmt_json_end_array(j);
        cmt_json_end_object(j);
    }
    if (any)
        cmt_json_end_array(j);
    else
        cmt_json_null(j);
}

static void html_trace(struct cmt_html_report *h, const struct cmt_report *r)
{
    cmt_json_begin_object(&h->j);
    cmt_json_key(&h->j, "report");
    cmt_report_render_page_value(r, &h->j);
    json_timeline(&h->j, r);
    json_sites(&h->j, r);
    json_pools(&h->j, r);
    cmt_json_end_object(&h->j);
}

static void html_trace_error(struct cmt_html_report *h, const char *path, const char *error)
{
    cmt_json_begin_object(&h->j);
    cmt_json_key(&h->j, "report");
    cmt_json_begin_object(&h->j);
    cmt_json_key(&h->j, "trace");
    cmt_json_string(&h->j, path);
    cmt_json_key(&h->j, "error");
    cmt_json_string(&h->j, error);
    cmt_json_end_object(&h->j);
    cmt_json_end_object(&h->j);
}

static int html_end(struct cmt_html_report *h)
{
    if (!h->traces_closed)
        cmt_json_end_array(&h->j);
    cmt_json_end_object(&h->j);
    int err = fclose(h->mem) != 0 ? -errno : 0;
    h->mem = NULL;
    if (!err) {
        fputs(cmt_html_head, h->out);
        /* '<' only ever stands inside JSON strings: \u003c reads the same */
        const char *p = h->buf, *end = h->buf + h->len;
        while (p < end) {
            const char *lt = memchr(p, '<', (size_t)(end - p));
            size_t run = (size_t)((lt ? lt : end) - p);
            fwrite(p, 1, run, h->out);
            if (!lt)
                break;
            fputs("\\u003c", h->out);
            p = lt + 1;
        }
        fputs(cmt_html_tail, h->out);
        if (fflush(h->out) != 0 || ferror(h->out))
            err = -(errno ? errno : EIO);
    }
    free(h->buf);
    h->buf = NULL;
    return err;
}

/* The model's "job_view": the comparison and the jobs as `report --json`
 * gives them (from the traces, or from summaries: then with their number
 * and settings), after the traces; page.js draws it (docs/html.md, "The job
 * view"). */
static void html_job_view(struct cmt_html_report *h, const struct cmt_process_summary *rows, size_t n,
                          const struct cmt_job_set *jobs, const struct cmt_job_render_options *jopt,
                          const char *settings)
{
    cmt_json_end_array(&h->j);
    h->traces_closed = true;
    cmt_json_key(&h->j, "job_view");
    cmt_json_begin_object(&h->j);
    if (settings) {
        cmt_json_key(&h->j, "summaries");
        cmt_json_uint(&h->j, n);
        cmt_json_key(&h->j, "settings");
        cmt_json_string(&h->j, settings);
    }
    cmt_json_key(&h->j, "comparison");
    cmt_compare_render_json(rows, n, &h->j);
    cmt_json_key(&h->j, "jobs");
    if (!jobs)
        cmt_json_null(&h->j);
    else
        cmt_job_render_json(jobs, jopt, &h->j);
    cmt_json_end_object(&h->j);
}

void cmt_report_render_html(const struct cmt_report *r, FILE *out)
{
    struct cmt_html_report h;
    if (html_begin(&h, out, CMT_VERSION) != 0)
        return;
    html_trace(&h, r);
    html_end(&h);
}

void cmt_report_set_render_html(const struct cmt_report_set *s, FILE *out)
{
    struct cmt_html_report h;
    if (html_begin(&h, out, CMT_VERSION) != 0)
        return;
    for (size_t i = 0; i < s->n; i++) {
        const struct cmt_report *r = s->report(s->ctx, i);
        if (r)
            html_trace(&h, r);
        else
            html_trace_error(&h, s->paths[i], s->summaries[i].error);
        s->done(s->ctx, i);
    }
    /* the same job view as from summaries, once the last trace is done */
    struct cmt_job_render_options jopt = {s->job_columns, s->clock_tolerance_ns, false};
    html_job_view(&h, s->summaries, s->n, s->jobs, &jopt, NULL);
    html_end(&h);
}

/* The job view from summaries (report_set.h): no trace in the model. */
void cmt_summary_set_render_html(const struct cmt_summary_set *s, FILE *out)
{
    struct cmt_html_report h;
    if (html_begin(&h, out, CMT_VERSION) != 0)
        return;
    struct cmt_job_render_options jopt = {s->job_columns, s->clock_tolerance_ns, true};
    html_job_view(&h, s->summaries, s->n, s->jobs, &jopt, s->settings);
    html_end(&h);
}
