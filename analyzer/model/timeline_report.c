/* SPDX-License-Identifier: MIT */
#include "timeline_report.h"

int cmt_timeline_report_build(struct cmt_timeline_report *t, const struct cmt_analysis *a, size_t buckets,
                              size_t chart_width, size_t chart_height)
{
    *t = (struct cmt_timeline_report){.analysis = a, .chart_width = chart_width, .chart_height = chart_height};
    return cmt_timeline_resample(&a->replay.timeline, buckets, &t->view);
}

void cmt_timeline_report_free(struct cmt_timeline_report *t)
{
    cmt_timeline_view_free(&t->view);
}

uint64_t cmt_timeline_report_rel_ns(const struct cmt_timeline_report *t, uint64_t ts)
{
    uint64_t start = t->analysis->info.start_monotonic_ns;
    return ts > start ? ts - start : 0;
}
