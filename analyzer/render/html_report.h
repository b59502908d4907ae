/* SPDX-License-Identifier: MIT */
#ifndef CUMEMTRACE_ANALYZER_HTML_REPORT_H
#define CUMEMTRACE_ANALYZER_HTML_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include "analysis.h"
#include "json_writer.h"
#include "report.h"

/* The one-file HTML report (docs/html.md): the page built at build time
 * from analyzer/render/html (libraries and page.js inlined) around a model,
 * one JSON object: per trace its report (as `report --json`), its timeline
 * (every bucket's lowest, highest and last live bytes per series) and its
 * call sites' floors per growth checkpoint (what each held throughout an
 * interval). The model is collected in memory and written at the end with
 * every '<' escaped, so no string from the trace can end the script
 * element that holds it. */
struct cmt_html_report {
    FILE *out;
    FILE *mem; /* the model, as it is written */
    char *buf;
    size_t len;
    struct cmt_json j;
};

/* Starts the model. Returns 0, or -errno. */
int cmt_html_begin(struct cmt_html_report *h, FILE *out, const char *version);
/* One analysed trace. */
void cmt_html_trace(struct cmt_html_report *h, const struct cmt_report *r, const struct cmt_analysis *a);
/* A trace that could not be analysed. */
void cmt_html_trace_error(struct cmt_html_report *h, const char *path, const char *error);
/* Writes the page with the model to out and frees what begin took.
 * Returns 0, or -errno when writing failed. */
int cmt_html_end(struct cmt_html_report *h);

/* Call sites whose floors the model carries, the largest first. */
#define CMT_HTML_MAX_SITES 400

#endif
