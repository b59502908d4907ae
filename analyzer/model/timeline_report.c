/* SPDX-License-Identifier: MIT */
#include "timeline_report.h"

#include <stdlib.h>

int cmt_timeline_report_build(struct cmt_timeline_report *t, const struct cmt_analysis *a, size_t buckets,
                              size_t chart_width, size_t chart_height)
{
    *t = (struct cmt_timeline_report){.path = a->path,
                                      .start_ns = a->info.start_monotonic_ns,
                                      .start_realtime_ns = a->info.start_realtime_ns,
                                      .chart_width = chart_width,
                                      .chart_height = chart_height};
    if (cmt_timeline_model_build(&t->view, &a->replay.timeline, buckets) != 0)
        return -1;
    if (!chart_width || !chart_height)
        return 0;
    t->chart_series = calloc(t->view.n_series ? t->view.n_series : 1, sizeof *t->chart_series);
    if (!t->chart_series || cmt_timeline_model_build(&t->chart, &a->replay.timeline, chart_width) != 0) {
        cmt_timeline_report_free(t);
        return -1;
    }
    for (size_t s = 0; s < t->view.n_series; s++)
        t->chart_series[s] = cmt_timeline_model_find(&t->chart, t->view.view.series[s]);
    return 0;
}

void cmt_timeline_report_free(struct cmt_timeline_report *t)
{
    cmt_timeline_model_free(&t->view);
    cmt_timeline_model_free(&t->chart);
    free(t->chart_series);
}

uint64_t cmt_timeline_report_rel_ns(const struct cmt_timeline_report *t, uint64_t ts)
{
    uint64_t start = t->start_ns;
    return ts > start ? ts - start : 0;
}
