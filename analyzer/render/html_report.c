/* SPDX-License-Identifier: MIT */
#include "cmt_version.h"
#include "render_parts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "frames.h"
#include "json_writer.h"
#include "memory_holder.h"
#include "timeline.h"

struct cmt_html_report {
    FILE *out;
    FILE *mem; /* the model, as it is written */
    char *buf;
    size_t len;
    struct cmt_json j;
};

/* The one-file HTML report (docs/html.md): the page built at build time
 * from analyzer/render/html (libraries and page.js inlined) around a model,
 * one JSON object: per trace its report (as `report --json`), its timeline
 * (every bucket's lowest, highest and last live bytes per series) and its
 * call sites' floors per growth checkpoint (what each held throughout an
 * interval). The model is collected in memory and written at the end with
 * every '<' escaped, so no string from the trace can end the script
 * element that holds it. */

/* Call sites whose floors the model carries, the largest first. */
#define CMT_HTML_MAX_SITES 400

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

/* The timeline as it stands after the replay: at most CMT_TIMELINE_BUCKETS
 * buckets, each with every series' lowest, highest and last live bytes. */
static void json_timeline(struct cmt_json *j, const struct cmt_report *r, const struct cmt_analysis *a)
{
    struct cmt_timeline_view v;
    cmt_json_key(j, "timeline");
    if (cmt_timeline_resample(&a->replay.timeline, CMT_TIMELINE_BUCKETS, &v) != 0 || v.n == 0) {
        cmt_json_null(j);
        return;
    }
    cmt_json_begin_object(j);
    cmt_json_key(j, "origin_ns");
    cmt_json_uint(j, cmt_report_rel_ns(r, v.origin));
    cmt_json_key(j, "bucket_ns");
    cmt_json_uint(j, v.width);
    cmt_json_key(j, "buckets");
    cmt_json_uint(j, v.n);
    cmt_json_key(j, "end_ns");
    cmt_json_uint(j, cmt_report_rel_ns(r, v.end));
    uint_array(j, "allocs", &v.counts[0].allocs, v.n, sizeof v.counts[0] / sizeof(uint64_t));
    uint_array(j, "frees", &v.counts[0].frees, v.n, sizeof v.counts[0] / sizeof(uint64_t));
    uint_array(j, "failures", &v.counts[0].failures, v.n, sizeof v.counts[0] / sizeof(uint64_t));
    cmt_json_key(j, "series");
    cmt_json_begin_array(j);
    for (size_t s = 0; s < v.n_series; s++) {
        const struct cmt_timeline_series *ts = v.series[s];
        const struct cmt_timeline_cell *c = &v.cells[s * v.n];
        const size_t stride = sizeof *c / sizeof(uint64_t);
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, ts->device);
        /* by kind; the block and job layers add series of their own */
        cmt_json_key(j, "layer");
        cmt_json_string(j, "kind");
        cmt_json_key(j, "name");
        cmt_json_string(j, cmt_timeline_kind_name(ts->kind));
        cmt_json_key(j, "peak_bytes");
        cmt_json_uint(j, ts->peak);
        cmt_json_key(j, "peak_time_ns");
        cmt_json_uint(j, ts->peak ? cmt_report_rel_ns(r, ts->peak_ts) : 0);
        cmt_json_key(j, "live_at_end_bytes");
        cmt_json_uint(j, ts->live);
        uint_array(j, "min", &c->min, v.n, stride);
        uint_array(j, "max", &c->max, v.n, stride);
        uint_array(j, "last", &c->last, v.n, stride);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    cmt_timeline_view_free(&v);
}

static void json_frames(struct cmt_json *j, const struct cmt_report *r, uint32_t stack)
{
    const struct cmt_stack_frames *sf = cmt_frames_get(r->frames, stack);
    cmt_json_key(j, "frames");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < sf->n; i++) {
        const struct cmt_frame *f = &sf->frames[i];
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
    cmt_json_end_array(j);
    cmt_json_key(j, "site_frame");
    if (sf->site < sf->n)
        cmt_json_uint(j, sf->site);
    else
        cmt_json_null(j);
}

struct site_pick {
    uint32_t stack;
    uint64_t top; /* its highest floor */
};

static int by_top(const void *pa, const void *pb)
{
    const struct site_pick *a = pa, *b = pb;
    if (a->top != b->top)
        return a->top > b->top ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The call sites' floors per growth checkpoint interval (replay.h): the
 * lowest bytes each site held during the interval, so what it held
 * throughout. The largest CMT_HTML_MAX_SITES sites. */
static void json_sites(struct cmt_json *j, const struct cmt_report *r, const struct cmt_analysis *a)
{
    const struct cmt_replay *rp = &a->replay;
    uint32_t n = rp->growth.n;
    cmt_json_key(j, "sites");
    struct site_pick *picks = n ? calloc(rp->n_active ? rp->n_active : 1, sizeof *picks) : NULL;
    if (!picks) {
        cmt_json_null(j);
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < rp->n_active; i++) {
        uint32_t id = rp->active_sites[i];
        const uint64_t *s = rp->site_extra[id].samples;
        if (!s)
            continue;
        uint64_t top = 0;
        for (uint32_t c = 0; c < n; c++)
            top = s[c] > top ? s[c] : top;
        if (top)
            picks[k++] = (struct site_pick){id, top};
    }
    /* per device and holder (PyTorch, cuBLAS, ..., the rest), the sum of
     * every site's floor: held throughout each interval by that holder */
    uint64_t *by_holder = calloc((size_t)(CMT_MAX_DEVICES + 1) * CMT_HOLDER_COUNT * n, sizeof *by_holder);
    for (size_t i = 0; by_holder && i < k; i++) {
        const struct cmt_site_stats *st = &rp->sites[picks[i].stack];
        uint8_t home = st->home & (uint8_t)~CMT_SITE_HOME_DIRTY;
        int64_t device = home ? (int64_t)((home - 1) / CMT_CLASS_COUNT) - 1 : -1;
        if (device < -1 || device >= CMT_MAX_DEVICES)
            continue;
        enum cmt_holder hd = cmt_holder_of(r->frames, picks[i].stack);
        uint64_t *row = &by_holder[((size_t)(device + 1) * CMT_HOLDER_COUNT + hd) * n];
        const uint64_t *s = rp->site_extra[picks[i].stack].samples;
        for (uint32_t c = 0; c < n; c++)
            row[c] += s[c];
    }
    qsort(picks, k, sizeof *picks, by_top);
    if (k > CMT_HTML_MAX_SITES)
        k = CMT_HTML_MAX_SITES;
    cmt_json_begin_object(j);
    cmt_json_key(j, "origin_ns");
    cmt_json_uint(j, rp->growth.started ? cmt_report_rel_ns(r, rp->growth.origin) : 0);
    cmt_json_key(j, "interval_ns");
    cmt_json_uint(j, 1ull << rp->growth.shift);
    cmt_json_key(j, "intervals");
    cmt_json_uint(j, n);
    cmt_json_key(j, "by_holder");
    cmt_json_begin_array(j);
    for (size_t row = 0; by_holder && row < (size_t)(CMT_MAX_DEVICES + 1) * CMT_HOLDER_COUNT; row++) {
        const uint64_t *v = &by_holder[row * n];
        bool any = false;
        for (uint32_t c = 0; c < n && !any; c++)
            any = v[c] != 0;
        if (!any)
            continue;
        cmt_json_begin_object(j);
        cmt_json_key(j, "device");
        cmt_json_int(j, (int64_t)(row / CMT_HOLDER_COUNT) - 1);
        cmt_json_key(j, "holder");
        cmt_json_string(j, cmt_holder_key((enum cmt_holder)(row % CMT_HOLDER_COUNT)));
        uint_array(j, "floor", v, n, 1);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    free(by_holder);
    cmt_json_key(j, "list");
    cmt_json_begin_array(j);
    for (size_t i = 0; i < k; i++) {
        const struct cmt_site_stats *st = &rp->sites[picks[i].stack];
        cmt_json_begin_object(j);
        cmt_json_key(j, "stack_id");
        cmt_json_uint(j, picks[i].stack);
        /* the device of its home account (the first it counted in) */
        cmt_json_key(j, "device");
        uint8_t home = st->home & (uint8_t)~CMT_SITE_HOME_DIRTY;
        cmt_json_int(j, home ? (int64_t)((home - 1) / CMT_CLASS_COUNT) - 1 : -1);
        cmt_json_key(j, "kind");
        cmt_json_string(j, cmt_timeline_kind_name(st->kind));
        uint_array(j, "floor", rp->site_extra[picks[i].stack].samples, n, 1);
        json_frames(j, r, picks[i].stack);
        cmt_json_end_object(j);
    }
    cmt_json_end_array(j);
    cmt_json_end_object(j);
    free(picks);
}

static void html_trace(struct cmt_html_report *h, const struct cmt_report *r)
{
    const struct cmt_analysis *a = r->analysis;
    cmt_json_begin_object(&h->j);
    cmt_json_key(&h->j, "report");
    cmt_report_render_json_value(r, &h->j);
    json_timeline(&h->j, r, a);
    json_sites(&h->j, r, a);
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
    html_end(&h);
}
