/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TIMELINE_REPORT_H
#define CUMEMTRACE_ANALYZER_TIMELINE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis.h"
#include "timeline_model.h"

/* What `cumemtrace timeline` shows: the replay's timeline resampled to a
 * number of buckets, and the size of the text charts. */
struct cmt_timeline_report {
    const char *path;
    uint64_t start_ns;          /* the trace's start, absolute monotonic */
    uint64_t start_realtime_ns; /* the same on the wall clock */
    struct cmt_timeline_model view;
    size_t chart_width, chart_height;
    /* With a chart: the timeline downsampled to chart_width buckets, and
     * each series of view's index in it (SIZE_MAX: not there). */
    struct cmt_timeline_model chart;
    size_t *chart_series;
};

/* Returns 0, or -1 when out of memory. */
int cmt_timeline_report_build(struct cmt_timeline_report *t, const struct cmt_analysis *a, size_t buckets,
                              size_t chart_width, size_t chart_height);
void cmt_timeline_report_free(struct cmt_timeline_report *t);
/* ns since the trace started, from a monotonic timestamp. */
uint64_t cmt_timeline_report_rel_ns(const struct cmt_timeline_report *t, uint64_t ts);

#endif
