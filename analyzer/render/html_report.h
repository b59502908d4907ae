/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HTML_REPORT_H
#define CUMEMTRACE_ANALYZER_HTML_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"
#include "report_set.h"

/* The one-file HTML report (docs/html.md): the page built at build time
 * from analyzer/render/html (libraries and page.js inlined) around a model,
 * one JSON object: per trace its report (as `report --json`), its timeline
 * (every bucket's lowest, highest and last live bytes per series) and its
 * call sites' floors per growth checkpoint (what each held throughout an
 * interval). The model is collected in memory and written at the end with
 * every '<' escaped, so no string from the trace can end the script
 * element that holds it. */
void cmt_report_render_html(const struct cmt_report *r, FILE *out);
void cmt_report_set_render_html(const struct cmt_report_set *s, FILE *out);

/* Call sites whose floors the model carries, the largest first. */
#define CMT_HTML_MAX_SITES 400

#endif
