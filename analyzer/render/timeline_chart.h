/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TIMELINE_CHART_H
#define CUMEMTRACE_ANALYZER_TIMELINE_CHART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline_model.h"
#include "units.h"

/* A compact text chart of one series of chart (a timeline model with as
 * many buckets as the chart is wide; series: its index there, SIZE_MAX or
 * past the end: no chart): at most width columns,
 * height rows, each column covering the same stretch of time. A '#' cell
 * was live throughout its column (at or below the column's lowest live
 * bytes), a ':' cell only at times (between the lowest and the highest). The
 * axis marks the column of the series' peak with '^'. Every line starts
 * with indent. start is the trace's start (time 0 on the axis). */
void cmt_timeline_chart(FILE *out, const struct cmt_timeline_model *chart, size_t series, size_t height,
                        const char *indent, uint64_t start);

#endif
