/* SPDX-License-Identifier: MIT */
#include "report_events.h"

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "forensics.h"
#include "phases.h"

static int build_threads(struct cmt_report_events *e, const struct cmt_trace_model *m)
{
    e->threads = calloc(m->n_threads ? m->n_threads : 1, sizeof *e->threads);
    if (!e->threads)
        return -1;
    for (size_t i = 0; i < m->n_threads; i++)
        e->threads[i] = (struct cmt_report_thread){m->threads[i].tid, cmt_model_string(m, m->threads[i].name_id)};
    e->n_threads = m->n_threads;
    return 0;
}

static int build_samples(struct cmt_report_events *e, const struct cmt_forensics *f)
{
    e->devices = calloc(CMT_MAX_DEVICES, sizeof *e->devices);
    if (!e->devices)
        return -1;
    for (int d = 0; f && d < CMT_MAX_DEVICES; d++) {
        const struct cmt_device_forensics *df = f->devices[d];
        if (!df || !df->seen)
            continue;
        struct cmt_report_device_samples *ds = &e->devices[e->n_devices++];
        ds->device = d;
        ds->samples = calloc(df->sample_series.n ? df->sample_series.n : 1, sizeof *ds->samples);
        if (!ds->samples)
            return -1;
        for (size_t i = 0; i < df->sample_series.n; i++) {
            const struct cmt_sample_point *s = &df->samples[i];
            ds->samples[i] = (struct cmt_report_sample){
                .ts = s->ts,
                .used = s->total > s->free ? s->total - s->free : 0,
                .unexplained = cmt_sample_gap(s),
                .pool_reserved = s->pool_reserved,
                .pool_used = s->pool_used,
            };
        }
        ds->n = df->sample_series.n;
    }
    return 0;
}

static int build_failures(struct cmt_report_events *e, const struct cmt_replay *rp)
{
    e->failures = calloc(rp->n_failures ? rp->n_failures : 1, sizeof *e->failures);
    if (!e->failures)
        return -1;
    for (size_t i = 0; i < rp->n_failures; i++) {
        const struct cmt_failure *f = &rp->failures[i];
        e->failures[i] = (struct cmt_report_failure){
            .api = f->api,
            .result = f->result,
            .device = f->device,
            .tid = f->tid,
            .stack = f->stack,
            .size = f->size,
            .ts = f->ts,
            .live_device_bytes = f->live_device_bytes,
        };
    }
    e->n_failures = rp->n_failures;
    return 0;
}

static int build_steps(struct cmt_report_events *e, const struct cmt_analysis *a)
{
    size_t n = 0;
    const struct cmt_phase_step *st = a->phases ? cmt_phases_steps(a->phases, &n) : NULL;
    e->steps = calloc(n ? n : 1, sizeof *e->steps);
    if (!e->steps)
        return -1;
    for (size_t i = 0; i < n; i++)
        e->steps[i] = (struct cmt_report_step){
            .name = st[i].name ? cmt_model_string(&a->model, st[i].name) : NULL,
            .number = st[i].number,
            .start_ts = st[i].start_ts,
            .end_ts = st[i].end_ts,
            .peak = st[i].peak,
            .live_at_end = st[i].live_at_end,
            .alloc_bytes = st[i].alloc_bytes,
        };
    e->n_steps = n;
    return 0;
}

int cmt_report_events_build(struct cmt_report_events *e, const struct cmt_analysis *a)
{
    memset(e, 0, sizeof *e);
    if (build_threads(e, &a->model) != 0 || build_samples(e, a->forensics) != 0 ||
        build_failures(e, &a->replay) != 0 || build_steps(e, a) != 0) {
        cmt_report_events_free(e);
        return -1;
    }
    return 0;
}

void cmt_report_events_free(struct cmt_report_events *e)
{
    for (size_t i = 0; e->devices && i < e->n_devices; i++)
        free(e->devices[i].samples);
    free(e->devices);
    free(e->threads);
    free(e->failures);
    free(e->steps);
    memset(e, 0, sizeof *e);
}
