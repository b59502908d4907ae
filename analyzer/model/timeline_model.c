/* SPDX-License-Identifier: MIT */
#include "timeline_model.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int cmt_timeline_model_build(struct cmt_timeline_model *m, const struct cmt_timeline *t, size_t max_buckets)
{
    memset(m, 0, sizeof *m);
    if (cmt_timeline_resample(t, max_buckets, &m->view) != 0)
        return -1;
    const struct cmt_timeline_view *v = &m->view;
    m->n = v->n;
    m->origin = v->origin;
    m->width = v->width;
    m->end = v->end;
    m->counts = v->counts;
    m->starts = calloc(v->n + 1, sizeof *m->starts);
    m->series = calloc(v->n_series ? v->n_series : 1, sizeof *m->series);
    if (!m->starts || !m->series) {
        cmt_timeline_model_free(m);
        return -1;
    }
    for (size_t b = 0; b <= v->n; b++)
        m->starts[b] = cmt_timeline_view_start(v, b);
    m->n_series = v->n_series;
    for (size_t s = 0; s < v->n_series; s++) {
        const struct cmt_timeline_series *src = v->series[s];
        m->series[s] = (struct cmt_timeline_model_series){
            .device = src->device,
            .kind = src->kind,
            .name = cmt_timeline_kind_name(src->kind),
            .live = src->live,
            .peak = src->peak,
            .peak_ts = src->peak_ts,
            .peak_bucket = cmt_timeline_view_bucket(v, src->peak_ts),
            .cells = &v->cells[s * v->n],
        };
    }
    return 0;
}

void cmt_timeline_model_free(struct cmt_timeline_model *m)
{
    free(m->starts);
    free(m->series);
    cmt_timeline_view_free(&m->view);
    memset(m, 0, sizeof *m);
}

size_t cmt_timeline_model_find(const struct cmt_timeline_model *m, const struct cmt_timeline_series *s)
{
    for (size_t i = 0; s && i < m->view.n_series; i++)
        if (m->view.series[i] == s)
            return i;
    return SIZE_MAX;
}

size_t cmt_timeline_model_bucket(const struct cmt_timeline_model *m, uint64_t ts)
{
    return cmt_timeline_view_bucket(&m->view, ts);
}
