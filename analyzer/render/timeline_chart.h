/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_TIMELINE_CHART_H
#define CUMEMTRACE_ANALYZER_TIMELINE_CHART_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "timeline.h"
#include "units.h"

/* A compact text chart of one timeline series: at most width columns,
 * height rows, each column covering the same stretch of time. A '#' cell
 * was live throughout its column (at or below the column's lowest live
 * bytes), a ':' cell only at times (between the lowest and the highest). The
 * axis marks the column of the series' peak with '^'. Every line starts
 * with indent. start is the trace's start (time 0 on the axis). */
void cmt_timeline_chart(FILE *out, const struct cmt_timeline *t, const struct cmt_timeline_series *s,
                        size_t width, size_t height, const char *indent, uint64_t start);

#endif
