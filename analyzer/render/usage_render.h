/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_USAGE_RENDER_H
#define CUMEMTRACE_ANALYZER_USAGE_RENDER_H

#include <stdio.h>

#include "report.h"

struct cmt_json;

/* The report's "Allocation calls", "Short-lived allocations" and "Device
 * memory by thread" sections (docs/report.md); nothing without has_usage. */
void cmt_usage_render_text(const struct cmt_report *r, FILE *out);
/* Their JSON members ("allocation_calls", "threads") inside the report's
 * object; nothing without has_usage. */
void cmt_usage_render_json(const struct cmt_report *r, struct cmt_json *j);

#endif
